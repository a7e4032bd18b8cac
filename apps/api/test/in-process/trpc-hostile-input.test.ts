/**
 * Issue 40, row 6: an input tRPC cannot read (not JSON, or superjson metadata that makes superjson
 * throw: a null input, paths that are not there, custom and class types, endless recursion,
 * prototype keys) is read only after the token and its scope are checked, so such a call without
 * a token is answered 401 and without the scope 403; with both it is answered 400 in our words,
 * never the JavaScript engine's ("Cannot destructure…", "Maximum call stack size exceeded"). Over
 * real HTTP, on every way /trpc serves a call: queries (one, and a batch) and the subscription
 * through tRPC's handler, mutations on the direct path and through the handler, one and a batch.
 */
import { describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import { type Answer, send, TOKEN } from '../support/http.ts';
import type { RunningApi } from '../support/in-process.ts';
import { sqliteTestStore, type TestStoreInstance } from '../support/stores.ts';

const READER = 'hostile-input-reader-0123456789';
const SCRAPER = 'hostile-input-scraper-0123456789';

/** Inputs as the wire carries them (JSON text), each of which superjson or JSON.parse throws on. */
const HOSTILE: Record<string, string> = {
  'a null input': 'null',
  'not JSON': '{"json":',
  'a referential path that is not there': JSON.stringify({
    json: { a: {} },
    meta: { referentialEqualities: { 'x.y': ['a.z.w'] } },
  }),
  'a custom type': JSON.stringify({ json: { id: '1' }, meta: { values: { id: ['custom', 'evil'] } } }),
  'a class type': JSON.stringify({ json: { id: '1' }, meta: { values: { id: ['class', 'Foo'] } } }),
  'an unknown type': JSON.stringify({ json: { id: '1' }, meta: { values: { id: ['nosuch'] } } }),
  'a bigint that is no number': JSON.stringify({ json: { id: 'abc' }, meta: { values: { id: ['bigint'] } } }),
  'a map that is no list': JSON.stringify({ json: { id: 5 }, meta: { values: { id: ['map'] } } }),
  'a __proto__ path': JSON.stringify({ json: { id: '1' }, meta: { values: { '__proto__.x': ['bigint'] } } }),
  'a constructor.prototype path': JSON.stringify({
    json: { id: '1' },
    meta: { values: { 'constructor.prototype.x': ['bigint'] } },
  }),
};
/** Too long for a URL: sent in bodies only. superjson's walker overflows the stack on it. */
const DEEP = {
  'metadata 5,000 arrays deep': `{"json":{"id":"1"},"meta":{"values":${'['.repeat(5_000)}${']'.repeat(5_000)}}}`,
};

/** What no answer may hold: engine messages, their names, stack frames, paths. */
const ENGINE_TEXT =
  /Cannot|undefined|stack|Maximum|not a function|not iterable|not allowed|convert|Unexpected|Unknown transformation|Error\b|\bat \S+ \(|:\d+:\d+|node_modules|\/src\//;

const NO_TOKEN = 'Missing bearer token: send it as "Authorization: Bearer <token>".';
const errorItem = (path: string, status: number, message: string) => {
  const code = { 400: ['BAD_REQUEST', -32600], 401: ['UNAUTHORIZED', -32001], 403: ['FORBIDDEN', -32003] }[
    status as 400 | 401 | 403
  ]!;
  return { error: { json: { message, code: code[1], data: { code: code[0], httpStatus: status, path } } } };
};

type Call = {
  /** How the call is sent, for the test's name. */
  way: string;
  paths: string[];
  batch: boolean;
  method: 'GET' | 'POST';
  /** The scope it needs, for the 403: a token without it. */
  scope: 'read' | 'write';
  /** tRPC's own handler rather than the direct path (POST only). */
  handler?: boolean;
};

const CALLS: Call[] = [
  { way: 'a query', paths: ['plants.list'], batch: false, method: 'GET', scope: 'read' },
  {
    way: 'a batch of queries',
    paths: ['plants.list', 'plants.get'],
    batch: true,
    method: 'GET',
    scope: 'read',
  },
  { way: 'a mutation (direct path)', paths: ['plants.create'], batch: false, method: 'POST', scope: 'write' },
  {
    way: 'a batch of mutations (direct path)',
    paths: ['plants.create', 'plants.delete'],
    batch: true,
    method: 'POST',
    scope: 'write',
  },
  {
    way: "a mutation (tRPC's handler)",
    paths: ['plants.delete'],
    batch: false,
    method: 'POST',
    scope: 'write',
    handler: true,
  },
  {
    way: "a batch of mutations (tRPC's handler)",
    paths: ['plants.create', 'plants.update'],
    batch: true,
    method: 'POST',
    scope: 'write',
    handler: true,
  },
];

function sendCall(api: RunningApi, call: Call, input: string, token: string | undefined): Promise<Answer> {
  const wire = call.batch ? `{${call.paths.map((_, i) => `"${i}":${input}`).join(',')}}` : input;
  const query = [call.batch && 'batch=1', call.method === 'GET' && `input=${encodeURIComponent(wire)}`]
    .filter(Boolean)
    .join('&');
  return send(`${api.url}/trpc/${call.paths.join(',')}${query && `?${query}`}`, {
    method: call.method,
    headers: {
      ...(token !== undefined && { authorization: `Bearer ${token}` }),
      ...(call.method === 'POST' && { 'content-type': 'application/json' }),
      ...(call.handler && { 'trpc-accept': 'application/json' }),
    },
    ...(call.method === 'POST' && { body: wire }),
  });
}

/** The body a call is answered with when each of its calls fails so. */
const expected = (call: Call, status: number, message: string) => {
  const items = call.paths.map((path) => errorItem(path, status, message));
  return call.batch ? items : items[0];
};

/** `plants.events` with `input`: the tRPC error its SSE stream carries (it answers 200, then the error). */
async function subscriptionError(api: RunningApi, input: string, token: string | undefined) {
  const controller = new AbortController();
  const response = await fetch(`${api.url}/trpc/plants.events?input=${encodeURIComponent(input)}`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  let text = '';
  const decoder = new TextDecoder();
  const reader = response.body!.getReader();
  const done = /event: serialized-error\ndata: (.*)\n\n/;
  while (!done.test(text)) {
    const chunk = await reader.read();
    if (chunk.done) break;
    text += decoder.decode(chunk.value, { stream: true });
  }
  controller.abort();
  return { status: response.status, text, error: JSON.parse(done.exec(text)![1]!) as unknown };
}

describe('a tRPC input that cannot be read', () => {
  let api: RunningApi;
  let store: TestStoreInstance;
  apiOnStore(sqliteTestStore, (running) => ({ api, store } = running), {
    env: { AUTH_FAILURE_MAX: '0' },
    tokens: [
      { name: 'reader', secret: READER, scopes: ['read'] },
      { name: 'scraper', secret: SCRAPER, scopes: ['metrics'] },
    ],
  });

  describe.each(CALLS)('as $way', (call) => {
    const inputs = Object.entries(call.method === 'POST' ? { ...HOSTILE, ...DEEP } : HOSTILE);
    const lacking = call.scope === 'read' ? SCRAPER : READER;
    const where = call.method === 'POST' ? 'request body' : 'request parameters';
    // The direct path reads the body as JSON itself, and says so (as REST does).
    const notJson = call.method === 'POST' && !call.handler;

    it.each(inputs)(
      'answers %s 401 without a token, 403 without the scope, then 400 in our words',
      async (_, input) => {
        const answers = {
          missing: await sendCall(api, call, input, undefined),
          forbidden: await sendCall(api, call, input, lacking),
          refused: await sendCall(api, call, input, TOKEN),
        };
        expect(answers.missing.status).toBe(401);
        expect(answers.missing.json).toStrictEqual(expected(call, 401, NO_TOKEN));
        expect(answers.missing.headers.get('www-authenticate')).toBe('Bearer');
        expect(answers.forbidden.status).toBe(403);
        expect(answers.forbidden.json).toStrictEqual(
          expected(call, 403, `This token lacks the ${call.scope} scope this operation needs.`),
        );
        expect(answers.refused.status).toBe(400);
        if (notJson && input === HOSTILE['not JSON']) {
          const items = call.paths.map((path) => ({
            error: {
              json: {
                message: 'The request body is not valid JSON.',
                code: -32700,
                data: { code: 'PARSE_ERROR', httpStatus: 400, path },
              },
            },
          }));
          expect(answers.refused.json).toStrictEqual(call.batch ? items : items[0]);
        } else {
          expect(answers.refused.json).toStrictEqual(
            expected(call, 400, `Invalid ${where}: the input is not valid tRPC JSON (superjson).`),
          );
        }
        for (const answer of Object.values(answers)) expect(answer.text).not.toMatch(ENGINE_TEXT);
      },
    );
  });

  describe('as the subscription (plants.events)', () => {
    it.each(Object.entries(HOSTILE))(
      'ends its stream with 401 without a token, 403 without the scope, then 400 in our words',
      async (_, input) => {
        const missing = await subscriptionError(api, input, undefined);
        const forbidden = await subscriptionError(api, input, SCRAPER);
        const refused = await subscriptionError(api, input, TOKEN);
        expect(missing.error).toStrictEqual(errorItem('plants.events', 401, NO_TOKEN).error);
        expect(forbidden.error).toStrictEqual(
          errorItem('plants.events', 403, 'This token lacks the read scope this operation needs.').error,
        );
        expect(refused.error).toStrictEqual(
          errorItem(
            'plants.events',
            400,
            'Invalid request parameters: the input is not valid tRPC JSON (superjson).',
          ).error,
        );
        for (const answer of [missing, forbidden, refused]) {
          expect(answer.status).toBe(200);
          expect(answer.text).not.toMatch(ENGINE_TEXT);
        }
      },
    );
  });

  it('stored nothing, and logged no error', async () => {
    expect(await store.ids()).toStrictEqual([]);
    expect(api.logs.filter((line) => /"level":(50|60)/.test(line))).toStrictEqual([]);
  });
});
