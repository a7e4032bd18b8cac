import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restRoutes } from '../../src/http/rest.ts';
import { type ApiProcess, runApiCommand, startApiProcess } from '../support/api-process.ts';
import { reportAttempt } from '../support/hostile-report.ts';
import { JSON_HEADERS, send, TOKEN } from '../support/http.ts';
import { oddTrpcPaths, sampleLines } from '../support/odd-trpc.ts';
import { openSse, type SseStream } from '../support/sse.ts';
import { sqliteTestStore, type TestStore, type TestStoreInstance, testStores } from '../support/stores.ts';

/**
 * The hostile-client suite (issue 22): clients without a token, or with only the `read` scope, try
 * to grow what the built service keeps (memory, /metrics, tables, event streams) and to break it
 * with odd input. Each attempt is held to a bound stated and asserted here, and reported through
 * `reportAttempt` (test-results/hostile-clients.jsonl and stdout). The rate limit is off, so the
 * bounds themselves hold, not the limiter; TOKEN (every scope) only sets up and scrapes.
 */

/** Per-instance stream limits small enough to fill in a test. */
const STREAMS_MAX = 60;
const STREAMS_PER_TOKEN = 30;
const REPLAY_MAX = 100;
const PROTOTYPE_NAMES = [
  'valueOf',
  '__proto__',
  'hasOwnProperty',
  'constructor',
  'toString',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
  '__lookupGetter__',
];
/** Methods a client may send that the api serves nowhere (fetch refuses CONNECT, TRACE, TRACK). */
const ODD_METHODS = ['PROPFIND', 'MKCOL', 'PURGE', 'SEARCH', 'LOCK', 'REPORT', 'M-SEARCH', 'UNLINK'];

const SCRAPE = { authorization: `Bearer ${TOKEN}` };
const as = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

/** The service as `pnpm start` runs it, on `store`, with its rate limit off and tokens reloaded every 200 ms. */
async function startHostileTarget(
  store: TestStoreInstance,
  env: Record<string, string> = {},
): Promise<ApiProcess> {
  return startApiProcess({
    env: {
      ...store.env,
      RATE_LIMIT_MAX: '0',
      TOKEN_REFRESH_MS: '200',
      EVENT_STREAMS_MAX: String(STREAMS_MAX),
      EVENT_STREAMS_PER_TOKEN: String(STREAMS_PER_TOKEN),
      EVENTS_REPLAY_MAX: String(REPLAY_MAX),
      ...env,
    },
  });
}

/** Issues `read`-only tokens with the admin CLI, as an operator would, and waits until `api` accepts them. */
async function issueReadTokens(
  api: ApiProcess,
  store: TestStoreInstance,
  names: string[],
): Promise<string[]> {
  const secrets: string[] = [];
  for (const name of names) {
    const { stdout } = await runApiCommand(['token', 'create', '--name', name, '--scope', 'read'], store.env);
    secrets.push(stdout.trim());
  }
  for (const secret of secrets) {
    for (let i = 0; (await send(`${api.url}/plants?limit=1`, { headers: as(secret) })).status !== 200; i++) {
      if (i > 100) throw new Error('an issued token was not accepted within 5 s');
      await sleep(50);
    }
  }
  return secrets;
}

/** Runs `task` for each item, `concurrency` at a time. */
async function pool<T>(
  items: readonly T[],
  concurrency: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

/** The sample lines of /metrics, and the request counter's series among them (without values). */
async function scrape(api: ApiProcess): Promise<{ lines: string[]; requestSeries: Set<string> }> {
  const lines = sampleLines((await send(`${api.url}/metrics`, { headers: SCRAPE })).text);
  const requestSeries = new Set(
    lines
      .filter((line) => line.startsWith('plant_store_http_requests_total{'))
      .map((line) => line.replace(/ \S+$/, '')),
  );
  return { lines, requestSeries };
}

/** One sample's value from /metrics lines, 0 when absent. */
function sample(lines: readonly string[], series: string): number {
  const line = lines.find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** Resident memory of a process now, from /proc, in MiB. */
function rssMiB(pid: number): number {
  const kib = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib) / 1024;
}

/** Log lines at error level or above (pino 50+): a 500, a stack. */
function errorLines(api: ApiProcess): string[] {
  return api.logs.filter(
    (line) => line.startsWith('{') && (JSON.parse(line) as { level: number }).level >= 50,
  );
}

/** Answers counted by status, e.g. `{"404": 12}`. */
function tally(statuses: readonly number[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

const fiveHundreds = (statuses: readonly number[]) => statuses.filter((status) => status >= 500).length;

describe('hostile clients against the built service on sqlite', () => {
  let store: TestStoreInstance;
  let api: ApiProcess;
  let readers: string[];

  beforeAll(async () => {
    store = await sqliteTestStore.setup();
    api = await startHostileTarget(store);
    readers = await issueReadTokens(
      api,
      store,
      Array.from({ length: 6 }, (_, i) => `reader-${i}`),
    );
    for (const id of [1, 2, 3]) {
      await send(`${api.url}/plants`, {
        method: 'POST',
        headers: JSON_HEADERS,
        body: `{"id":${id},"name":"Fern"}`,
      });
    }
  }, 60_000);
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
    await store?.teardown();
  });

  it('metrics: 765 token-less requests to odd combinations of procedures (issue 22 row 5) add at most 36 series', async () => {
    const before = await scrape(api);
    const statuses: number[] = [];
    const requests = oddTrpcPaths(255).flatMap((path) =>
      ['GET', 'POST', 'PROPFIND'].map((method) => ({ path, method })),
    );
    await pool(requests, 8, async ({ path, method }) => {
      const body = method === 'GET' ? undefined : '{}';
      statuses.push(
        (await send(`${api.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body }))
          .status,
      );
    });
    const after = await scrape(api);
    // The scrape itself is counted too (route /metrics): not the attacker's.
    const added = [...after.requestSeries].filter(
      (series) => !before.requestSeries.has(series) && !series.includes('route="/metrics"'),
    );
    const addedLines = after.lines.length - before.lines.length;
    reportAttempt({
      attempt: 'metrics growth (row 5)',
      tried: `${requests.length} token-less requests to ${requests.length / 3} distinct /trpc/<odd combination>?batch=1 paths with GET, POST and PROPFIND`,
      bound:
        'at most 36 new request series (2 routes x 3 method labels x 6 statuses) and 576 new /metrics lines; no 5xx',
      observed: `${added.length} new series, ${addedLines} new lines, answers ${JSON.stringify(tally(statuses))}`,
    });
    expect(fiveHundreds(statuses)).toBe(0);
    expect(added.length).toBeLessThanOrEqual(36);
    expect(addedLines).toBeLessThanOrEqual(36 * 16);
    for (const series of added) expect(series).toMatch(/route="\/trpc( \(batch\))?",/);
  });

  it('metrics: unknown methods and paths add at most one series per method label, status and route', async () => {
    const before = await scrape(api);
    const statuses: number[] = [];
    const requests = [
      // Distinct paths nobody serves, with methods the api serves and others.
      ...Array.from({ length: 300 }, (_, i) => ({
        path: `/${randomBytes(6).toString('hex')}/${i}?${randomBytes(3).toString('hex')}=1`,
        method: ['GET', 'POST', 'DELETE', ...ODD_METHODS][i % (3 + ODD_METHODS.length)]!,
      })),
      // Odd methods on every route template the api serves.
      ...restRoutes().flatMap((route) =>
        ODD_METHODS.map((method) => ({ path: route.path.replace(/\{[^}]+\}/g, '1'), method })),
      ),
    ];
    await pool(requests, 8, async ({ path, method }) => {
      statuses.push((await send(`${api.url}${path}`, { method })).status);
    });
    const after = await scrape(api);
    const added = [...after.requestSeries].filter(
      (series) => !before.requestSeries.has(series) && !series.includes('route="/metrics"'),
    );
    const routes = new Set(restRoutes().map((route) => route.path)).size;
    // unmatched: GET, POST, DELETE and other, 404 each; a served route: other, 405 (401 first for tokens).
    const bound = 4 + routes * 2;
    reportAttempt({
      attempt: 'unknown methods and paths',
      tried: `${requests.length} token-less requests: 300 distinct unserved paths with GET, POST, DELETE and ${ODD_METHODS.join(', ')}; those methods on each of the ${routes} route templates`,
      bound: `at most ${bound} new request series (unmatched x 4 method labels; each route x other x 2 statuses); method labels only GET, POST, DELETE or other; no 5xx`,
      observed: `${added.length} new series, answers ${JSON.stringify(tally(statuses))}`,
    });
    expect(fiveHundreds(statuses)).toBe(0);
    expect(added.length).toBeLessThanOrEqual(bound);
    for (const series of added) expect(series).toMatch(/method="(GET|POST|DELETE|other)"/);
  });

  it('prototype names in the query (issue 22 row 4): no 5xx and no error line on any route', async () => {
    const paths = [
      '/plants',
      '/plants/1',
      '/plants/events',
      '/webhook-endpoints',
      '/trpc/plants.list',
      '/trpc/plants.get',
      ...PROTOTYPE_NAMES.map((name) => `/trpc/${name}`),
    ];
    const statuses: number[] = [];
    let requests = 0;
    for (const path of paths) {
      for (const name of PROTOTYPE_NAMES) {
        requests += 1;
        const controller = new AbortController();
        const res = await fetch(`${api.url}${path}?${name}=1&${name}=2`, {
          headers: { ...as(readers[0]!), 'last-event-id': name },
          signal: controller.signal,
        });
        statuses.push(res.status);
        controller.abort();
      }
    }
    const stream = await openSse(
      `${api.url}/plants/events?after=0&${PROTOTYPE_NAMES.map((n) => `${n}=1`).join('&')}`,
      as(readers[0]!),
    );
    statuses.push(stream.status);
    const replayed = (await stream.waitFor(3)).length;
    stream.close();
    const errors = errorLines(api);
    reportAttempt({
      attempt: 'prototype names (row 4)',
      tried: `${requests + 1} requests with a read token: ${PROTOTYPE_NAMES.join(', ')} as repeated query parameters and as Last-Event-ID on ${paths.length} paths`,
      bound:
        '0 answers 5xx, 0 error lines in the log; unknown parameters ignored (the event stream still replays its 3 events)',
      observed: `answers ${JSON.stringify(tally(statuses))}, ${errors.length} error lines, stream replayed ${replayed}`,
    });
    expect(fiveHundreds(statuses)).toBe(0);
    expect(errors).toStrictEqual([]);
    expect(replayed).toBe(3);
  });

  it('odd and oversized tRPC batches: refused before any call runs, never 5xx, no error line', async () => {
    const reader = as(readers[0]!);
    const input = (value: unknown) => encodeURIComponent(JSON.stringify(value));
    const creates = (n: number, from: number) =>
      JSON.stringify(
        Object.fromEntries(
          Array.from({ length: n }, (_, i) => [i, superjson.serialize({ id: BigInt(from + i), name: 'x' })]),
        ),
      );
    const cases: {
      what: string;
      path: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      status: number;
    }[] = [
      {
        what: '101 calls',
        path: `/trpc/${Array(101).fill('plants.create').join(',')}?batch=1`,
        method: 'POST',
        body: creates(101, 1_000),
        status: 413,
      },
      {
        what: '101 calls without a token',
        path: `/trpc/${Array(101).fill('plants.list').join(',')}?batch=1`,
        headers: {},
        status: 413,
      },
      {
        what: '1,500 calls in the URL (past the header limit)',
        path: `/trpc/${Array(1_500).fill('plants.list').join(',')}?batch=1`,
        status: 431,
      },
      {
        what: 'a body over 64 KiB, to a mutation the read token may not call (refused before the body is read)',
        path: '/trpc/plants.create',
        method: 'POST',
        body: `{"json":{"id":"1","name":"${'x'.repeat(70_000)}"}}`,
        status: 403,
      },
      {
        what: 'a body that is not JSON, to a mutation the read token may not call (refused before the body is read)',
        path: '/trpc/plants.create',
        method: 'POST',
        body: '{"json":',
        status: 403,
      },
      {
        what: 'superjson metadata naming an unknown class, to a mutation the read token may not call (refused before the body is read)',
        path: '/trpc/plants.create',
        method: 'POST',
        body: '{"json":{"id":"1","name":"x"},"meta":{"values":{"id":["class","Foo"]}}}',
        status: 403,
      },
      {
        what: 'superjson metadata naming __proto__',
        path: `/trpc/plants.get?input=${input({ json: { id: '1' }, meta: { values: { ['__proto__']: ['bigint'] } } })}`,
        status: 400,
      },
      {
        what: 'a batch input that is not an object',
        path: `/trpc/plants.get,plants.get?batch=1&input=${input([1, 2])}`,
        status: 400,
      },
      {
        what: 'queries and mutations mixed',
        path: '/trpc/plants.list,plants.create?batch=1',
        method: 'POST',
        body: '{}',
        status: 400,
      },
      { what: 'a subscription in a batch', path: '/trpc/plants.events,plants.events?batch=1', status: 400 },
      { what: 'empty procedure names', path: '/trpc/,,,,?batch=1', status: 404 },
      {
        what: 'creates with a read token',
        path: `/trpc/${Array(100).fill('plants.create').join(',')}?batch=1`,
        method: 'POST',
        body: creates(100, 2_000),
        status: 403,
      },
    ];
    const seen: string[] = [];
    for (const { what, path, method = 'GET', headers = reader, body, status } of cases) {
      const answer = await send(`${api.url}${path}`, { method, headers, body });
      seen.push(`${what}: ${answer.status}`);
      expect([what, answer.status]).toStrictEqual([what, status]);
      expect(answer.text).not.toMatch(/\n\s+at |node_modules|\/src\//);
    }
    const ids = await store.ids();
    const errors = errorLines(api);
    reportAttempt({
      attempt: 'odd and oversized tRPC batches',
      tried: `${cases.length} requests: ${cases.map((c) => c.what).join('; ')}`,
      bound:
        'each refused with its stated 4xx before any call runs (413, 431, 400, 404, 403; a mutation the token may not call before its body is read); 0 plants created; 0 error lines',
      observed: `${seen.join('; ')}; plants stored ${ids.length} (the 3 set up); ${errors.length} error lines`,
    });
    expect(ids).toStrictEqual([1n, 2n, 3n]);
    expect(errors).toStrictEqual([]);
  });

  it('streams by many tokens: a full instance still gives every token its fair share', async () => {
    const streams: { token: number; stream: SseStream; ended?: string }[] = [];
    const open = async (token: number) => {
      const stream = await openSse(`${api.url}/plants/events`, as(readers[token]!));
      if (stream.status !== 200) return stream.status;
      const entry: { token: number; stream: SseStream; ended?: string } = { token, stream };
      void stream.ended.then((how) => {
        entry.ended = how;
      });
      streams.push(entry);
      return 200;
    };
    const rssBefore = rssMiB(api.child.pid!);
    // Five tokens each open as many as they may (their own limit is 30: 150 asked of 60 places).
    const statuses: number[] = [];
    for (let token = 0; token < 5; token++) {
      for (let i = 0; i < STREAMS_PER_TOKEN; i++) statuses.push(await open(token));
    }
    // A sixth, late, token still gets in, by taking the places of the largest holders' oldest.
    let late = 0;
    while ((await open(5)) === 200) late += 1;
    await sleep(200);
    const live = (token: number) => streams.filter((s) => s.token === token && s.ended === undefined).length;
    const held = [0, 1, 2, 3, 4, 5].map(live);
    const displaced = streams.filter((s) => s.ended !== undefined);
    const share = Math.floor(STREAMS_MAX / 6);
    const rssAfter = rssMiB(api.child.pid!);
    reportAttempt({
      attempt: 'streams by many tokens',
      tried: `5 read tokens opened ${STREAMS_PER_TOKEN} event streams each against EVENT_STREAMS_MAX=${STREAMS_MAX}, then a 6th opened streams until refused`,
      bound: `at most ${STREAMS_MAX} streams open; each of the 6 tokens holds at least floor(${STREAMS_MAX} / 6) = ${share}; displaced streams end cleanly (resumable by id); RSS grows by less than 32 MiB`,
      observed: `held ${held.join(', ')} (total ${held.reduce((a, b) => a + b)}); the 6th opened ${late}; ${displaced.length} displaced, ended ${JSON.stringify(tally(displaced.map((s) => (s.ended === 'end' ? 200 : 0))))} (200: clean); answers to the first 150 ${JSON.stringify(tally(statuses))}; RSS ${rssBefore.toFixed(1)} -> ${rssAfter.toFixed(1)} MiB`,
    });
    expect(held.reduce((a, b) => a + b)).toBeLessThanOrEqual(STREAMS_MAX);
    expect(Math.min(...held)).toBeGreaterThanOrEqual(share);
    expect(displaced.every((s) => s.ended === 'end')).toBe(true);
    expect(rssAfter - rssBefore).toBeLessThan(32);
    for (const { stream } of streams) stream.close();
  });

  it('memory: 10,000 hostile requests grow resident memory by less than 48 MiB', async () => {
    const trpcPaths = oddTrpcPaths(2_000);
    const kinds = [
      (i: number) => ({
        path: trpcPaths[i % trpcPaths.length]!,
        method: ODD_METHODS[i % ODD_METHODS.length]!,
      }),
      (i: number) => ({
        path: `/${randomBytes(8).toString('hex')}?${PROTOTYPE_NAMES[i % 10]}=${i}`,
        method: 'GET',
      }),
      (i: number) => ({
        path: `/plants?${PROTOTYPE_NAMES[i % 10]}=1&limit=1`,
        method: 'GET',
        token: readers[i % 6],
      }),
      (i: number) => ({
        path: '/plants',
        method: 'POST',
        token: readers[i % 6],
        body: `{"id":${i},"name":"x"}`,
      }),
      (i: number) => ({ path: '/readyz', method: i % 2 === 0 ? 'GET' : 'HEAD' }),
      (i: number) => ({
        path: `/plants/${i}`,
        method: 'GET',
        token: `pst_${randomBytes(32).toString('base64url')}`,
      }),
    ];
    const requests = Array.from({ length: 10_000 }, (_, i) => kinds[i % kinds.length]!(i));
    // Warm up with a tenth of them, so the baseline holds the code paths and buffers they use.
    const run = async (batch: typeof requests) => {
      const statuses: number[] = [];
      await pool(
        batch,
        16,
        async ({
          path,
          method,
          token,
          body,
        }: {
          path: string;
          method: string;
          token?: string;
          body?: string;
        }) => {
          const headers: Record<string, string> = { 'x-request-id': randomBytes(16).toString('hex') };
          if (token !== undefined) headers.authorization = `Bearer ${token}`;
          if (body !== undefined) headers['content-type'] = 'application/json';
          statuses.push((await send(`${api.url}${path}`, { method, headers, body })).status);
        },
      );
      return statuses;
    };
    await run(requests.slice(0, 1_000));
    const rssBefore = rssMiB(api.child.pid!);
    const heapBefore = sample((await scrape(api)).lines, 'nodejs_heap_size_used_bytes') / 2 ** 20;
    const statuses = await run(requests);
    await sleep(500);
    const rssAfter = rssMiB(api.child.pid!);
    const { lines } = await scrape(api);
    const heapAfter = sample(lines, 'nodejs_heap_size_used_bytes') / 2 ** 20;
    reportAttempt({
      attempt: 'memory',
      tried:
        '10,000 requests, 16 at a time, without a token or with a read token: odd /trpc batches with odd methods, random unserved paths with prototype names, creates with a read token, /readyz, random invalid tokens, a random X-Request-Id each',
      bound:
        'resident memory grows by less than 48 MiB and the V8 heap in use by less than 32 MiB (after a 1,000-request warm-up); no 5xx; /metrics stays under 3,000 lines',
      observed: `RSS ${rssBefore.toFixed(1)} -> ${rssAfter.toFixed(1)} MiB, heap used ${heapBefore.toFixed(1)} -> ${heapAfter.toFixed(1)} MiB, /metrics ${lines.length} lines, answers ${JSON.stringify(tally(statuses))}`,
    });
    expect(fiveHundreds(statuses)).toBe(0);
    expect(rssAfter - rssBefore).toBeLessThan(48);
    expect(heapAfter - heapBefore).toBeLessThan(32);
    expect(lines.length).toBeLessThan(3_000);
    expect(errorLines(api)).toStrictEqual([]);
  }, 120_000);
});

describe.each(testStores())(
  'hostile clients against the store of the built service on $name',
  (testStore: TestStore) => {
    let store: TestStoreInstance;
    let api: ApiProcess;
    let reader: string;

    beforeAll(async () => {
      store = await testStore.setup();
      api = await startHostileTarget(store);
      reader = (await issueReadTokens(api, store, ['reader']))[0]!;
    }, 60_000);
    afterAll(async () => {
      await api?.stop();
      api?.cleanup();
      await store?.teardown();
    });

    const TABLES = [
      'plants',
      'plant_events',
      'idempotency_keys',
      'webhook_endpoints',
      'webhook_deliveries',
      'api_tokens',
    ];
    const rowCounts = async () => {
      const counts: Record<string, number> = {};
      for (const table of TABLES)
        counts[table] = Number((await store.rows(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
      return counts;
    };

    it('tables: token-less and read-token writes add no row anywhere', async () => {
      const before = await rowCounts();
      const statuses: number[] = [];
      const writes = Array.from({ length: 600 }, (_, i) => {
        const headers: Record<string, string> =
          i % 2 === 0 ? { 'content-type': 'application/json' } : as(reader);
        const key = { 'idempotency-key': `k-${i}` };
        return [
          {
            path: '/plants',
            method: 'POST',
            headers: { ...headers, ...key },
            body: `{"id":${10_000 + i},"name":"x"}`,
          },
          { path: `/plants/${i}`, method: 'DELETE', headers: { ...headers, ...key } },
          { path: '/webhook-endpoints', method: 'POST', headers, body: '{"url":"https://example.com/hook"}' },
          { path: '/webhook-endpoints/we_000000000000000000000000/ping', method: 'POST', headers },
          { path: '/trpc/plants.create,plants.create?batch=1', method: 'POST', headers, body: '{}' },
        ][i % 5]!;
      });
      await pool(writes, 8, async ({ path, method, headers, body }) => {
        statuses.push((await send(`${api.url}${path}`, { method, headers, body })).status);
      });
      const after = await rowCounts();
      reportAttempt({
        attempt: `tables (${testStore.name})`,
        tried: `${writes.length} writes, half without a token and half with a read token: creates and deletes with Idempotency-Keys, endpoint registrations, pings, tRPC create batches`,
        bound: `0 rows added to ${TABLES.join(', ')}; every answer 401 or 403`,
        observed: `rows ${JSON.stringify(before)} -> ${JSON.stringify(after)}; answers ${JSON.stringify(tally(statuses))}`,
      });
      expect(after).toStrictEqual(before);
      expect(statuses.every((status) => status === 401 || status === 403)).toBe(true);
    });

    it(`replay: resuming from further back than EVENTS_REPLAY_MAX (${REPLAY_MAX}) is refused, by every way of resuming`, async () => {
      for (let id = 1; id <= REPLAY_MAX + 50; id++) {
        await send(`${api.url}/plants`, {
          method: 'POST',
          headers: JSON_HEADERS,
          body: `{"id":${id},"name":"Fern"}`,
        });
      }
      const statuses: number[] = [];
      const started = performance.now();
      let slowest = 0;
      let errorEvents = 0;
      for (let i = 0; i < 30; i++) {
        const t0 = performance.now();
        if (i % 3 === 2) {
          const input = encodeURIComponent(JSON.stringify({ json: { lastEventId: '0' } }));
          const subscription = await openSse(`${api.url}/trpc/plants.events?input=${input}`, as(reader));
          const events = await subscription.waitFor(2);
          if (events[1]?.event === 'serialized-error') errorEvents += 1;
          subscription.close();
        } else {
          const stream = await openSse(
            `${api.url}/plants/events${i % 3 === 0 ? '?after=0' : ''}`,
            i % 3 === 1 ? { ...as(reader), 'last-event-id': '0' } : as(reader),
          );
          statuses.push(stream.status);
        }
        slowest = Math.max(slowest, performance.now() - t0);
      }
      // Within the bound, the replay is served: the last REPLAY_MAX events, then live.
      const bounded = await openSse(
        `${api.url}/plants/events?after=${await eventIdBefore(REPLAY_MAX)}`,
        as(reader),
      );
      const replayed = (await bounded.waitFor(REPLAY_MAX)).length;
      bounded.close();
      reportAttempt({
        attempt: `replay (${testStore.name})`,
        tried: `30 reconnects of a read token while the log holds ${REPLAY_MAX + 50} events: ?after=0, Last-Event-ID: 0 and tRPC lastEventId 0, in turn`,
        bound: `each refused (410; tRPC: an error event) without replaying an event, within 1 s; a resume ${REPLAY_MAX} events back still replays them`,
        observed: `SSE answers ${JSON.stringify(tally(statuses))}, tRPC error events ${errorEvents} of 10, slowest ${Math.round(slowest)} ms, ${Math.round(performance.now() - started)} ms in all; the bounded resume replayed ${replayed}`,
      });
      expect(statuses).toStrictEqual(Array(20).fill(410));
      expect(errorEvents).toBe(10);
      expect(slowest).toBeLessThan(1_000);
      expect(replayed).toBe(REPLAY_MAX);
    });

    /** The id of the event `back` events before the newest (ids read straight from the store). */
    async function eventIdBefore(back: number): Promise<string> {
      const rows = await store.rows('SELECT id FROM plant_events ORDER BY id DESC');
      return String(rows[back]!.id);
    }

    it('/readyz flood: any number of token-less callers cost at most one store call a second', async () => {
      const pings = async () => {
        const { lines } = await scrape(api);
        return ['ok', 'error']
          .map((outcome) =>
            sample(
              lines,
              `plant_store_store_operation_duration_seconds_count{operation="ping",outcome="${outcome}"}`,
            ),
          )
          .reduce((a, b) => a + b);
      };
      const before = await pings();
      const started = performance.now();
      const statuses: number[] = [];
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          while (performance.now() - started < 3_000) statuses.push((await send(`${api.url}/readyz`)).status);
        }),
      );
      const elapsed = performance.now() - started;
      const calls = (await pings()) - before;
      const bound = Math.floor(elapsed / 1_000) + 1;
      reportAttempt({
        attempt: `/readyz flood (${testStore.name})`,
        tried: `64 token-less callers asking /readyz back to back for ${(elapsed / 1000).toFixed(1)} s`,
        bound: `at most floor(seconds) + 1 = ${bound} store calls (one a second, shared); every answer 200 {"status":"ok"}`,
        observed: `${statuses.length} answers ${JSON.stringify(tally(statuses))}, ${calls} store calls`,
      });
      expect(statuses.every((status) => status === 200)).toBe(true);
      expect(calls).toBeLessThanOrEqual(bound);
    });
  },
);
