import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { type AppOptions, createApp } from '../../src/app.ts';
import { createTokenVerifier } from '../../src/auth.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { TOKEN } from './http.ts';
import { sqliteTestStore, type TestStoreInstance } from './stores.ts';

export type InProcessApi = {
  url: string;
  store: TestStoreInstance;
  /** Every log line the app wrote, parsed. */
  logs: Record<string, unknown>[];
  close(): Promise<void>;
};

/**
 * The app built with `createApp` on a fresh SQLite store, served on a loopback port in this
 * process, for tests that need to pass options the environment cannot (a limiter, a registry). Its
 * verifier accepts `TOKEN` with every scope unless `options.verifier` is given.
 */
export async function startInProcess(options: Partial<AppOptions> = {}): Promise<InProcessApi> {
  const store = await sqliteTestStore.setup();
  const plants = await openSqliteStore(store.env.DATABASE_URL!.slice('file:'.length));
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') logs.push(JSON.parse(line));
      done();
    },
  });
  const app = createApp({
    store: plants,
    verifier: createTokenVerifier([{ name: 'tester', secret: TOKEN, scopes: ['read', 'write'] }]),
    log: pino({ level: 'info' }, sink),
    publicUrl: 'http://127.0.0.1',
    ...options,
  });
  const server = createServer(app.callback()).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    store,
    logs,
    async close() {
      await new Promise((resolve) => server.close(resolve));
      await plants.close();
      await store.teardown();
    },
  };
}
