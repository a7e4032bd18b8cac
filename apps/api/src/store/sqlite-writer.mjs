// The SQLite store's writer, run in a worker thread so that COMMIT's fsync never blocks the event
// loop. It owns the only write connection. Each message is a batch of writes (creates, deletes and
// the webhook outbox's updates); all batches waiting when the thread is free go into one
// transaction, and each batch's answer (one result per write) is posted only after COMMIT returned,
// i.e. after the WAL was fsync'd (synchronous=FULL). Plain JavaScript so it runs unchanged under tsx,
// vitest and the bundle.
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

/** @type {{ path: string, webhookUrls: string[] }} */
const { path, webhookUrls } = workerData;

const db = new Database(path);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 5000');
const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING');
const remove = db.prepare('DELETE FROM plants WHERE id = ?');
const enqueue = db.prepare(
  'INSERT INTO webhook_deliveries (id, url, payload, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
);
// While an attempt runs, next_attempt_at is its lease's end (see sqlite-migrations.ts).
const claim = db.prepare(`
  UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = @leaseEnd, updated_at = @now
  WHERE id IN (
    SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= @now
    ORDER BY next_attempt_at LIMIT @limit
  )
  RETURNING id, url, payload, attempts, created_at`);
const delivered = db.prepare(
  "UPDATE webhook_deliveries SET status = 'delivered', updated_at = ? WHERE id = ? AND status = 'pending'",
);
const retry = db.prepare(
  "UPDATE webhook_deliveries SET next_attempt_at = ?, last_error = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
);
const addToken = db.prepare(
  'INSERT INTO api_tokens (name, digest, scopes, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
);
const revokeToken = db.prepare('UPDATE api_tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL');
const failed = db.prepare(
  "UPDATE webhook_deliveries SET status = 'failed', last_error = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
);

/**
 * One write and its result: `{ create: plant, deliveries?: { ids, payload } }` → whether it inserted
 * (the deliveries, one per webhook URL, only if it did); `{ delete: id }` → whether it deleted;
 * `{ claim: { limit, leaseMs } }` → the claimed rows; `{ delivered | retry | failed: … }` → nothing;
 * `{ addToken: { name, digest, scopes } }` → whether it was added; `{ revokeToken: name }` → whether
 * an active token was revoked.
 */
function apply(write) {
  if (write.create) {
    const created = insert.run(write.create.id, write.create.name, write.create.tag ?? null).changes === 1;
    if (created && write.deliveries) {
      const now = Date.now();
      for (const [i, url] of webhookUrls.entries())
        enqueue.run(write.deliveries.ids[i], url, write.deliveries.payload, now, now, now);
    }
    return created;
  }
  if ('delete' in write) return remove.run(write.delete).changes === 1;
  const now = Date.now();
  if (write.addToken) {
    const { name, digest, scopes } = write.addToken;
    return addToken.run(name, digest, scopes.join(','), now).changes === 1;
  }
  if (write.revokeToken) return revokeToken.run(now, write.revokeToken).changes === 1;
  if (write.claim) return claim.all({ now, leaseEnd: now + write.claim.leaseMs, limit: write.claim.limit });
  if (write.delivered) delivered.run(now, write.delivered);
  else if (write.retry) retry.run(now + write.retry.delayMs, write.retry.error, now, write.retry.id);
  else if (write.failed) failed.run(write.failed.error, now, write.failed.id);
  return undefined;
}

const applyBatches = db.transaction((batches) => batches.map((writes) => writes.map(apply)));

parentPort.on('message', (first) => {
  // Every batch that queued up while the last COMMIT was being fsync'd joins this transaction.
  const batches = [];
  let closing = false;
  for (let message = first; message !== undefined; message = receiveMessageOnPort(parentPort)?.message) {
    if (message === 'close') closing = true;
    else batches.push(message);
  }
  if (batches.length > 0) {
    try {
      for (const results of applyBatches(batches)) parentPort.postMessage({ results });
    } catch (error) {
      const reason = String(error?.code ?? error?.name ?? 'error');
      for (const _ of batches) parentPort.postMessage({ error: reason });
    }
  }
  if (closing) {
    db.close();
    parentPort.close();
  }
});
