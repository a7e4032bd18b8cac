// The SQLite store's writer, run in a worker thread so that COMMIT's fsync never blocks the event
// loop. It owns the only write connection. Each message is a batch of writes (creates and deletes);
// all batches waiting when the thread is free go into one transaction, and each batch's answer
// (which writes changed a row) is posted only after COMMIT returned, i.e. after the WAL was
// fsync'd (synchronous=FULL). Plain JavaScript so it runs unchanged under tsx, vitest and the bundle.
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const db = new Database(workerData.path);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 5000');
const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING');
const remove = db.prepare('DELETE FROM plants WHERE id = ?');

/** One write: `{ create: plant }` or `{ delete: id }`; true when it changed a row. */
function apply(write) {
  if (write.create)
    return insert.run(write.create.id, write.create.name, write.create.tag ?? null).changes === 1;
  return remove.run(write.delete).changes === 1;
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
      for (const changed of applyBatches(batches)) parentPort.postMessage({ changed });
    } catch (error) {
      const failed = String(error?.code ?? error?.name ?? 'error');
      for (const _ of batches) parentPort.postMessage({ failed });
    }
  }
  if (closing) {
    db.close();
    parentPort.close();
  }
});
