import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { createApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log.ts';
import { openSqliteStore } from './store/sqlite.ts';

const SHUTDOWN_GRACE_MS = 10_000;

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  const log = createLogger(config);
  const store = openSqliteStore(config.sqlitePath);
  const tokens = config.apiTokens?.map((secret, i) => ({ name: `api-token-${i + 1}`, secret })) ?? [
    { name: 'generated', secret: generatedToken(config.sqlitePath) },
  ];
  const app = createApp({ store, tokens, log, publicUrl: `http://${config.host}:${config.port}` });

  const server = createServer(
    { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000 },
    app.callback(),
  );
  server.listen(config.port, config.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : config.port;
    log.info({ url: `http://${config.host}:${port}`, store: resolve(config.sqlitePath) }, 'listening');
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS).unref();
    server.close(async () => {
      clearTimeout(force);
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

await main();
