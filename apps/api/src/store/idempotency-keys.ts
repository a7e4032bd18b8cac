import { type Db, statements } from './sql.ts';
import type { ClaimOutcome, IdempotencyKeys, KeyClaim, Prune, StoredAnswer } from './contract.ts';

type KeyRow = {
  fingerprint: string;
  status: number | bigint | null;
  body: string | null;
  version: bigint | null;
};

const SQL = statements('keys', {
  // Inserts the row or takes over an expired or stale one; concurrent claims are decided by the
  // primary key (ON CONFLICT waits for the other's commit and re-checks the row).
  take: `INSERT INTO idempotency_keys (token_name, key, fingerprint, claim, claimed_at)
    VALUES (@tokenName, @key, @fingerprint, @claim, {now})
    ON CONFLICT (token_name, key) DO UPDATE
      SET fingerprint = excluded.fingerprint, claim = excluded.claim, claimed_at = excluded.claimed_at,
          status = NULL, body = NULL, version = NULL
      WHERE idempotency_keys.claimed_at < {now - @ttlMs}
         OR (idempotency_keys.status IS NULL AND idempotency_keys.claimed_at < {now - @inFlightMs}
             AND idempotency_keys.fingerprint = excluded.fingerprint)
    RETURNING claim`,
  read: 'SELECT fingerprint, status, body, version FROM idempotency_keys WHERE token_name = @tokenName AND key = @key',
  release: `DELETE FROM idempotency_keys
    WHERE token_name = @tokenName AND key = @key AND claim = @claim AND status IS NULL`,
  prune: `DELETE FROM idempotency_keys WHERE (token_name, key) IN (SELECT token_name, key FROM idempotency_keys
    WHERE claimed_at < {now - @olderThanMs} ORDER BY claimed_at LIMIT @limit {skip locked})`,
});

/** The Idempotency-Key table: a claim commits alone, so all see it; the answer commits with the change. */
export function idempotencyKeys(db: Db): IdempotencyKeys {
  return {
    /** Takes `key` when free, expired (`ttlMs`) or a crashed request's (`inFlightMs`, same fingerprint). */
    async claim(
      options: KeyClaim & { fingerprint: string; inFlightMs: number; ttlMs: number },
    ): Promise<ClaimOutcome> {
      // The holder may free the key between the two statements: then claim again.
      for (;;) {
        if ((await db.run(SQL.take, options)).changes === 1) return { state: 'claimed' };
        const [row] = await db.all<KeyRow>(SQL.read, options);
        if (row === undefined) continue;
        const { fingerprint, status, body, version } = row;
        if (status === null) return { state: 'in_flight', fingerprint };
        const answer: StoredAnswer = { status: Number(status), body };
        if (version !== null) answer.version = BigInt(version);
        return { state: 'completed', fingerprint, answer };
      }
    },
    /** Frees a claim that made no change, if this request still holds it. */
    release: async (claim: KeyClaim) => void (await db.run(SQL.release, claim)),
    prune: async (options: Prune) => (await db.run(SQL.prune, options)).changes,
  };
}
