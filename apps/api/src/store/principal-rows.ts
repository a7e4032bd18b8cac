import { jwtPrincipalName } from '../auth/jwt-names.ts';
import { disableOwnedBy } from './endpoint-rows.ts';
import { type Db, statements, type Time, toDate } from './sql.ts';
import type { PrincipalId, PrincipalStore } from './contract.ts';

type BlockRow = { issuer: string; subject: string; blocked_at: Time };

const SQL = statements('principals', {
  list: 'SELECT issuer, subject, blocked_at FROM blocked_principals ORDER BY issuer, subject',
  block: `INSERT INTO blocked_principals (issuer, subject, blocked_at) VALUES (@issuer, @subject, {now})
    ON CONFLICT DO NOTHING`,
  unblock: 'DELETE FROM blocked_principals WHERE issuer = @issuer AND subject = @subject',
});

/** Principals of identity providers cut off with `main.js principal block` (migration 15). */
export function principalStore(db: Db): PrincipalStore {
  return {
    /** Blocks it and, in the same transaction, disables its endpoints; `undefined` when it was already blocked. */
    block: ({ issuer, subject }: PrincipalId) =>
      db.transaction(async (tx) => {
        if ((await tx.run(SQL.block, { issuer, subject })).changes === 0) return undefined;
        return { endpointsDisabled: await disableOwnedBy(tx, jwtPrincipalName(issuer, subject)) };
      }),
    /** Whether it was blocked. Its endpoints stay disabled until an operator enables them. */
    unblock: async ({ issuer, subject }: PrincipalId) =>
      (await db.run(SQL.unblock, { issuer, subject })).changes === 1,
    list: async () =>
      (await db.all<BlockRow>(SQL.list)).map((row) => ({
        issuer: row.issuer,
        subject: row.subject,
        blockedAt: toDate(row.blocked_at),
      })),
    /** The names (jwt-names.ts) of every blocked principal. */
    blockedNames: async () =>
      (await db.all<BlockRow>(SQL.list)).map((row) => jwtPrincipalName(row.issuer, row.subject)),
  };
}
