import { connect, type PostgresStoreOptions } from './postgres/connection.ts';
import { notifications } from './postgres/listen.ts';
import { migratePostgres } from './postgres/migrate.ts';
import { EVENTS_CHANNEL, postgresPlants } from './postgres/plants.ts';
import { sharedParts } from './shared.ts';
import { sql } from './sql.ts';
import type { PlantStore } from './store.ts';

export { DURABLE_SESSION, type PostgresStoreOptions } from './postgres/connection.ts';
export { migratePostgres } from './postgres/migrate.ts';

const PING = sql('postgres.ping', 'SELECT 1');

/**
 * The shared store for several api instances: PostgreSQL through a `pg` pool (postgres/connection.ts),
 * migrated first. Creates are group committed (postgres/plants.ts): those made together become one
 * statement, answered after the server reports its COMMIT, durable because every connection sets
 * `synchronous_commit = on`. Concurrent creates of one id, from any number of instances, are decided
 * by the primary key: exactly one inserts.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PlantStore> {
  await migratePostgres(options);
  const connection = connect(options);
  const { db } = connection;
  const events = notifications({ ...options, channel: EVENTS_CHANNEL });
  return {
    ...postgresPlants(connection, options.poolSize),
    ping: async () => void (await db.all(PING)),
    // Each call fails or succeeds on its own, and the store recovers when the server does.
    failed: new Promise<Error>(() => {}),
    ...sharedParts(db, events.watch),
    close: () => connection.close(events.stop),
  };
}
