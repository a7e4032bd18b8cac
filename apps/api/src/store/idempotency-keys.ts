import { type Db, statements } from './sql.ts';
import type { ClaimOutcome, KeyClaim, Prune } from './store.ts';

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
 * The Idempotency-Key table, the same on both stores. Each call commits on its own (a claim is its
 * own short transaction), so a claim is seen at once by every process sharing the store; the answer
 * itself is stored by a keyed create or delete in the change's transaction (sqlite/plants.ts,
 * postgres/plants.ts). Times are the store's clock.
 */
export function idempotencyKeys(db: Db) {
  return {
    /**
     * Takes `key` for this request when nobody holds it, when its holder claimed it more than
     * `ttlMs` ago (the key has expired: whatever it was is forgotten), or when its holder has not
     * completed within `inFlightMs` and the fingerprint is the same (a crashed request's claim).
     * Otherwise reports what holds it.
     */
    async claim(
      options: KeyClaim & { fingerprint: string; inFlightMs: number; ttlMs: number },
    ): Promise<ClaimOutcome> {
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
    /** Frees a claim that made no change (the request failed), if this request still holds it. */
    release: async (claim: KeyClaim) => void (await db.run(SQL.release, claim)),
    /** Deletes keys claimed more than `olderThanMs` ago (see `Prune`); resolves with how many. */
    prune: async (options: Prune) => (await db.run(SQL.prune, options)).changes,
  };
}
