import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log.ts';
import { createMetrics } from './metrics.ts';
import { describeStore, migrateStore, openStore } from './store/open-store.ts';
import { listFailedDeliveries } from './webhooks/cli.ts';
import { type DeliveryWorker, startDeliveryWorker } from './webhooks/worker.ts';

const SHUTDOWN_GRACE_MS = 10_000;
/** API_TOKENS and the generated token may do everything. */
const ALL_SCOPES = ['read', 'write'] as const;
const USAGE = 'Usage: main.js [migrate | webhooks failed [--limit N]]';

/**
 * `main.js` serves; `main.js migrate` applies the store's pending migrations and exits;
 * `main.js webhooks failed` lists the webhook deliveries that used up their attempts and exits.
 */
async function main([command, ...args]: string[]): Promise<void> {
  const known =
    command === undefined || command === 'migrate' || (command === 'webhooks' && args[0] === 'failed');
  if (!known) {
    process.stderr.write(`Unknown command "${[command, ...args].join(' ')}". ${USAGE}\n`);
    process.exit(2);
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  const log = createLogger(config);
  const where = describeStore(config.store);
  if (command === 'migrate') {
    const applied = await startStep(() => migrateStore(config.store), 'migrate');
    log.info({ store: where, applied }, 'migrated');
    log.flush(() => process.exit(0));
    return;
  }
  if (command === 'webhooks') {
    await printFailedDeliveries(config, args.slice(1));
    return;
  }
  const store = await startStep(() => openStore(config.store, config.webhooks?.urls), 'open');
  const tokens = config.apiTokens?.map((secret, i) => ({
    name: `api-token-${i + 1}`,
    secret,
    scopes: ALL_SCOPES,
  })) ?? [
    // loadConfig requires API_TOKENS with PostgreSQL: only SQLite has a place for a generated token.
    ...(config.store.kind === 'sqlite'
      ? [{ name: 'generated', secret: generatedToken(config.store.path), scopes: ALL_SCOPES }]
      : []),
  ];
  // One registry for the app's metrics and the webhook worker's, served at /metrics.
  const metrics = createMetrics();
  const app = createApp({ store, tokens, log, metrics, publicUrl: `http://${config.host}:${config.port}` });

  const server = createServer(
    { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000 },
    app.callback(),
  );
  let stopping = false;
  let worker: DeliveryWorker | undefined;
  server.listen(config.port, config.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : config.port;
    log.info({ url: `http://${config.host}:${port}`, store: where }, 'listening');
    if (config.webhooks && !stopping) {
      worker = startDeliveryWorker({ outbox: store.deliveries, config: config.webhooks, log, metrics });
      log.info({ subscribers: config.webhooks.urls.length }, 'webhook worker started');
    }
  });

  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS).unref();
    // The worker finishes its attempts in flight (within the grace) while requests drain.
    const workerStopped = worker?.stop(SHUTDOWN_GRACE_MS);
    server.close(async () => {
      clearTimeout(force);
      await workerStopped;
      await store.close();
      log.info('stopped');
      log.flush();
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/**
 * Runs a start-up step that needs the store; if it fails (the server is unreachable, a migration
 * fails), says why on stderr and exits 1, so a supervisor restarts the process.
 */
async function startStep<T>(step: () => Promise<T>, what: 'open' | 'migrate'): Promise<T> {
  try {
    return await step();
  } catch (error) {
    const causes: string[] = [];
    for (let e: unknown = error; e instanceof Error; e = e.cause) {
      // A refused connection to a dual-stack host is an AggregateError with an empty message.
      causes.push(e.message || String((e as { code?: unknown }).code ?? e.name));
    }
    process.stderr.write(`Could not ${what} the store: ${causes.join(': ')}\n`);
    process.exit(1);
  }
}

/**
 * With no API_TOKENS, the service still starts authenticated: a token is generated on first start,
 * saved beside the database (mode 0600) and reused on later starts. Its value is never logged.
 */
function generatedToken(sqlitePath: string): string {
  const file = join(dirname(resolve(sqlitePath)), 'api-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dirname(file), { recursive: true });
  const token = randomBytes(24).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  process.stderr.write(`No API_TOKENS set: generated a bearer token and saved it to ${file}\n`);
  return token;
}

/** `webhooks failed [--limit N]`, see webhooks/cli.ts. */
async function printFailedDeliveries(config: Config, args: string[]): Promise<void> {
  let limit: number;
  try {
    const { values } = parseArgs({ args, options: { limit: { type: 'string', default: '100' } } });
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1) throw new Error('--limit must be a positive integer');
  } catch (error) {
    process.stderr.write(`${(error as Error).message}. ${USAGE}\n`);
    process.exit(2);
  }
  const store = await startStep(() => openStore(config.store), 'open');
  try {
    const { lines, summary } = await listFailedDeliveries(store.deliveries, { limit });
    for (const line of lines) process.stdout.write(`${line}\n`);
    process.stderr.write(`${summary}\n`);
  } finally {
    await store.close();
  }
}

await main(process.argv.slice(2));
