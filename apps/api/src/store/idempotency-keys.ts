import { type Db, statements } from './sql.ts';
import type { IdempotencyKeyStore } from './store.ts';

type KeyRow = { fingerprint: string; status: number | bigint | null; body: string | null };

const SQL = statements('keys', {
  /**
   * Takes a key: its row is inserted, or an expired (claimed before `@ttlMs`) or stale one (in flight
   * for longer than `@inFlightMs`, same fingerprint: a crashed request's) taken over, and `claim`
   * comes back; nothing comes back when another request holds it. Concurrent claims of one key, from
   * any instance, are decided by the primary key: ON CONFLICT waits for the other claim's commit and
   * then re-checks the row.
   */
  take: `INSERT INTO idempotency_keys (token_name, key, fingerprint, claim, claimed_at)
    VALUES (@tokenName, @key, @fingerprint, @claim, {now})
    ON CONFLICT (token_name, key) DO UPDATE
      SET fingerprint = excluded.fingerprint, claim = excluded.claim, claimed_at = excluded.claimed_at,
          status = NULL, body = NULL
      WHERE idempotency_keys.claimed_at < {now - @ttlMs}
         OR (idempotency_keys.status IS NULL AND idempotency_keys.claimed_at < {now - @inFlightMs}
             AND idempotency_keys.fingerprint = excluded.fingerprint)
    RETURNING claim`,
  read: 'SELECT fingerprint, status, body FROM idempotency_keys WHERE token_name = @tokenName AND key = @key',
  release: `DELETE FROM idempotency_keys
    WHERE token_name = @tokenName AND key = @key AND claim = @claim AND status IS NULL`,
  // Oldest first; keys another instance is pruning right now are left to it.
  prune: `DELETE FROM idempotency_keys WHERE (token_name, key) IN (SELECT token_name, key FROM idempotency_keys
    WHERE claimed_at < {now - @olderThanMs} ORDER BY claimed_at LIMIT @limit {skip locked})`,
});

/**
 * The Idempotency-Key table, the same on both stores. A keyed create or delete stores its answer
 * in its own transaction (sqlite/plants.ts, postgres/plants.ts).
 */
export function idempotencyKeys(db: Db): IdempotencyKeyStore {
  return {
    async claim(options) {
      // The holder may free the key between the two statements: then claim again.
      for (;;) {
        if ((await db.run(SQL.take, options)).changes === 1) return { state: 'claimed' };
        const [row] = await db.all<KeyRow>(SQL.read, options);
        if (row === undefined) continue;
        const { fingerprint, status, body } = row;
        if (status === null) return { state: 'in_flight', fingerprint };
        return { state: 'completed', fingerprint, answer: { status: Number(status), body } };
      }
    },
    release: async (claim) => void (await db.run(SQL.release, claim)),
    prune: async (options) => (await db.run(SQL.prune, options)).changes,
  };
}
