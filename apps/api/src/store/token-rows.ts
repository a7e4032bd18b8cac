import { parseScopes } from '../auth/scopes.ts';
import { disableOwnedBy } from './endpoint-rows.ts';
import { type Db, statements, type Time, toDate } from './sql.ts';
import type { StoredToken, TokenStore } from './contract.ts';

type TokenRow = { name: string; digest: string; scopes: string; created_at: Time; revoked_at: Time | null };

const SQL = statements('tokens', {
  list: 'SELECT name, digest, scopes, created_at, revoked_at FROM api_tokens ORDER BY name',
  active: 'SELECT name, digest, scopes FROM api_tokens WHERE revoked_at IS NULL',
  create: `INSERT INTO api_tokens (name, digest, scopes, created_at) VALUES (@name, @digest, @scopes, {now})
    ON CONFLICT DO NOTHING`,
  revoke: 'UPDATE api_tokens SET revoked_at = {now} WHERE name = @name AND revoked_at IS NULL',
});

/** Bearer tokens issued with `main.js token create`. */
export function tokenStore(db: Db): TokenStore {
  return {
    /** Adds a token; `false` when one of that name exists (revoked ones keep theirs). */
    create: async (token: StoredToken) =>
      (await db.run(SQL.create, { ...token, scopes: token.scopes.join(',') })).changes === 1,
    /** Revokes the active token (`undefined`: none) and, in the same transaction, disables its endpoints. */
    revoke: (name: string) =>
      db.transaction(async (tx) => {
        if ((await tx.run(SQL.revoke, { name })).changes === 0) return undefined;
        return { endpointsDisabled: await disableOwnedBy(tx, name) };
      }),
    list: async () =>
      (await db.all<TokenRow>(SQL.list)).map((row) => ({
        name: row.name,
        scopes: parseScopes(row.scopes),
        createdAt: toDate(row.created_at),
        revokedAt: row.revoked_at === null ? undefined : toDate(row.revoked_at),
      })),
    active: async (): Promise<StoredToken[]> =>
      (await db.all<TokenRow>(SQL.active)).map((row) => ({ ...row, scopes: parseScopes(row.scopes) })),
  };
}
