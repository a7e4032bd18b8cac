import { connect, type PostgresStoreOptions } from './connection.ts';
import { notifications } from './listen.ts';
import { migratePostgres } from './migrate.ts';
import { EVENTS_CHANNEL, postgresPlants } from './plants.ts';
import { sharedParts } from '../shared.ts';
import type { PlantStore, StoreHooks } from '../contract.ts';

export { DURABLE_SESSION, type PostgresStoreOptions } from './connection.ts';
export { migratePostgres } from './migrate.ts';

/** The store for several instances: creates answered after a durable COMMIT, one id decided by its key. */
export async function openPostgresStore(
  options: PostgresStoreOptions,
  { commits }: StoreHooks = {},
): Promise<PlantStore> {
  await migratePostgres(options);
  const connection = connect(options);
  const events = notifications({ ...options, channel: EVENTS_CHANNEL });
  return {
    ...postgresPlants(connection, options.poolSize, commits),
    // Each call fails or succeeds on its own, and the store recovers when the server does.
    failed: new Promise<Error>(() => {}),
    ...sharedParts(connection.db, events.watch),
    close: () => connection.close(events.stop),
  } satisfies PlantStore;
}
