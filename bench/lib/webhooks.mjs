// The webhook subscriber of the `webhook` scenario and the `backlog` command: a receiver process
// (bench/receiver.mjs, on the load generator's core) that the api delivers every create to, and
// the outbox backlog when the load stops: deliveries still pending in the api's SQLite file.

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { round2 } from './format.mjs';
import { send, spawnServer } from './system.mjs';

/** Starts a receiver; returns the api's environment for it and `afterLoad`, which reads the backlog. */
export async function webhookSubscriber(dir) {
  const receiver = await spawnServer('receiver', { dir, logToFile: false, cpu: 'load' });
  await receiver.ready();
  return {
    env: {
      WEBHOOK_URLS: `${receiver.url}/hook`,
      WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    },
    /** Pending deliveries now, and in seconds of the run's create rate. */
    async afterLoad(result) {
      const db = new Database(join(dir, 'plants.db'), { readonly: true });
      let pending;
      try {
        db.pragma('busy_timeout = 5000');
        pending = Number(
          db.prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'").get().n,
        );
      } finally {
        db.close();
      }
      const { received } = JSON.parse((await send(receiver.url, { path: '/count' })).text);
      const backlogSeconds = result.createsPerSec > 0 ? round2(pending / result.createsPerSec) : null;
      return { webhook: { pending, received, backlogSeconds } };
    },
    close: () => receiver.stop(),
  };
}
