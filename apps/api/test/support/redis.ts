import { Redis } from 'ioredis';

/** The Redis tests use: `TEST_REDIS_URL`, else the local one CI runs. */
export const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const problem = await (async () => {
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (error) {
    return String(error);
  } finally {
    client.disconnect();
  }
})();

/**
 * Whether the Redis legs run. With `PLANTS_REQUIRE_REDIS=1` (CI) an unreachable server throws
 * instead, so they fail loudly rather than being skipped.
 */
export function redisAvailable(): boolean {
  if (problem === undefined) return true;
  if (process.env.PLANTS_REQUIRE_REDIS === '1') {
    throw new Error(`PLANTS_REQUIRE_REDIS=1 but Redis at ${redisUrl} is not reachable: ${problem}`);
  }
  return false;
}
