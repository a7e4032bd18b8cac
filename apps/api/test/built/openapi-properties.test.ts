import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { stringifyJson } from '@plant-store/schema';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { COMMITTED_PATH } from '../../scripts/contract.ts';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';
import { send, TOKEN } from '../support/http.ts';
import { type Schema, SchemaArbitraries } from '../support/schema-arbitrary.ts';

/**
 * A suite generated from the document the built api serves: for every operation, valid and invalid
 * requests made from its JSON Schemas (bounds included), each answer checked against what the
 * document declares for it. Seeded: OPENAPI_PROPERTY_SEED and OPENAPI_PROPERTY_RUNS reproduce or
 * widen a run.
 */
const SEED = Number(process.env.OPENAPI_PROPERTY_SEED ?? 20261128);
const RUNS = Number(process.env.OPENAPI_PROPERTY_RUNS ?? 300);

/** Headers the server sets on purpose: each one an answer carries must be declared for it. */
const DELIBERATE = [
  'x-request-id',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'www-authenticate',
  'allow',
  'etag',
  'link',
  'idempotent-replayed',
  'content-location',
];
const METHODS = ['get', 'post', 'patch', 'delete'];
const AUTH = { authorization: `Bearer ${TOKEN}` };

type Operation = Schema & { responses: Record<string, Schema> };
type Case = {
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** What the document says of the request: every part valid, one part not, no token, wrong media type. */
  expect: 'valid' | 'invalid' | 'unauthenticated' | 'media type' | 'limited';
  /** Which part was made invalid. */
  part?: string;
};

/** Every operation of the committed document (the one served, as openapi-contract.test.ts checks). */
const operations = Object.entries(
  JSON.parse(readFileSync(COMMITTED_PATH, 'utf8')).paths as Record<string, Schema>,
).flatMap(([path, item]) => METHODS.filter((method) => method in item).map((method) => ({ path, method })));

let api: ApiProcess;
let doc: Schema;
let arbitraries: SchemaArbitraries;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addFormat('int64', { type: 'number', validate: Number.isInteger });
ajv.addFormat('int32', { type: 'number', validate: Number.isInteger });
const DOC_ID = 'https://plant-store.test/openapi.json';
/** Ids that exist, so valid requests reach the operations' successes too. */
const pools = {
  plants: [1n, 9007199254740993n, 2n ** 63n - 1n, -(2n ** 63n)],
  endpoints: [] as string[],
  deliveries: [] as string[],
};

beforeAll(async () => {
  api = await startApiProcess({
    env: {
      RATE_LIMIT_MAX: '1000000',
      AUTH_FAILURE_MAX: '1000000',
      WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_ENDPOINTS_PER_TOKEN: '10000',
    },
  });
  const served = await send(`${api.url}/openapi.json`);
  doc = served.json as Schema;
  // Schemas compiled alone: their `#/components/…` refer to the document.
  ajv.addSchema(JSON.parse(served.text.replaceAll('"#/components/', `"${DOC_ID}#/components/`)), DOC_ID);
  arbitraries = new SchemaArbitraries(doc);
});

/** Puts back what an earlier operation's cases deleted, so every operation can reach its successes. */
beforeEach(async () => {
  const json = { ...AUTH, 'content-type': 'application/json' };
  for (const id of pools.plants) {
    await send(`${api.url}/plants`, {
      method: 'POST',
      headers: json,
      body: `{"id":${id},"name":"Seed ${id}"}`,
    });
  }
  const left = (await send(`${api.url}/webhook-endpoints`, { headers: AUTH })).json as { id: string }[];
  pools.endpoints = pools.endpoints.filter((id) => left.some((endpoint) => endpoint.id === id));
  while (pools.endpoints.length < 2) {
    const created = await send(`${api.url}/webhook-endpoints`, {
      method: 'POST',
      headers: json,
      body: '{"url":"http://127.0.0.1:9/pool"}',
    });
    const id = (created.json as { id: string }).id;
    pools.endpoints.push(id);
    const ping = await send(`${api.url}/webhook-endpoints/${id}/ping`, { method: 'POST', headers: AUTH });
    pools.deliveries.push((ping.json as { id: string }).id);
  }
});

afterAll(async () => {
  await api?.stop();
  api?.cleanup();
});

/** Values that are valid by what the document says in words, not only in schemas. */
function override(path: string, method: string, name: string): fc.Arbitrary<unknown> | undefined {
  if (name === 'id' && path.startsWith('/plants/')) return fc.constantFrom(...pools.plants);
  if (name === 'id' && path.startsWith('/webhook-endpoints/')) return fc.constantFrom(...pools.endpoints);
  if (name === 'deliveryId') return fc.constantFrom(...pools.deliveries);
  // "before must be a delivery of this endpoint".
  if (name === 'before') return fc.constant(undefined);
  // "an https URL whose host resolves only to public addresses" (loopback is allowed for this test).
  if (name === 'url' && method === 'post')
    return fc.constantFrom('http://127.0.0.1:9/c', 'http://127.0.0.1:9/d?x=1');
  return undefined;
}

/** Requests to one operation: valid ones, ones with one invalid part, without a token, of another media type. */
function cases(path: string, method: string): { cases: fc.Arbitrary<Case>; refusable: boolean } {
  const operation = doc.paths[path][method] as Operation;
  const parameters = (operation.parameters ?? []).map((parameter: Schema) => arbitraries.resolve(parameter));
  const parts: Record<string, { valid: fc.Arbitrary<unknown>; invalid?: fc.Arbitrary<unknown> }> = {};
  for (const parameter of parameters) {
    const place = parameter.in;
    const own = override(path, method, parameter.name);
    const schemaValid = arbitraries.valid(parameter.schema, place);
    // Ids from the pools as well as others; a cursor only as the document allows it.
    const valid =
      own === undefined ? schemaValid : parameter.name === 'before' ? own : fc.oneof(own, schemaValid);
    parts[`${place}:${parameter.name}`] = {
      valid: parameter.required ? valid : fc.option(valid, { nil: undefined }),
      invalid: arbitraries.invalid(parameter.schema, place),
    };
  }
  const content = operation.requestBody?.content as Record<string, Schema> | undefined;
  const mediaTypes = Object.keys(content ?? {});
  if (content) {
    const schema = arbitraries.resolve(content[mediaTypes[0]!]!.schema);
    const members = Object.keys(schema.properties ?? {});
    const own = Object.fromEntries(
      members.map((name) => [name, override(path, method, name)]).filter(([, value]) => value),
    );
    const valid = arbitraries
      .valid(schema)
      .chain((body) =>
        fc
          .record(own as Record<string, fc.Arbitrary<unknown>>)
          .map((values) => ({ ...(body as object), ...values })),
      );
    parts.body = { valid, invalid: arbitraries.invalid(schema) };
  }
  const names = Object.keys(parts);
  const valid = fc.record(Object.fromEntries(names.map((name) => [name, parts[name]!.valid])));
  const invalidParts = names.filter((name) => parts[name]!.invalid);
  const request = (values: Record<string, unknown>, expect: Case['expect'], part?: string): Case => {
    // "Last-Event-ID … overrides `after`": a bad `after` is refused only without it.
    if (part === 'query:after') values['header:Last-Event-ID'] = undefined;
    // "an id other than the path's" is refused: a valid patch names the path's id, or none.
    if (path === '/plants/{id}' && method === 'patch' && expect !== 'invalid') {
      const body = values.body as Record<string, unknown>;
      if ('id' in body) body.id = values['path:id'];
    }
    let url = path.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(String(values[`path:${name}`])));
    const query = new URLSearchParams();
    const headers: Record<string, string> = { ...AUTH };
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) continue;
      const [place, key] = name.split(':') as [string, string];
      const text = Array.isArray(value) ? value.join(',') : String(value);
      if (place === 'query') query.set(key, text);
      if (place === 'header') headers[key] = text;
    }
    if (query.size > 0) url += `?${query}`;
    if (!content) return { path: url, headers, expect, part };
    headers['content-type'] =
      expect === 'media type' ? 'text/plain' : mediaTypes[Number(url.length % mediaTypes.length)]!;
    return { path: url, headers, body: stringifyJson(values.body), expect, part };
  };
  const arbitrariesOf: fc.Arbitrary<Case>[] = [valid.map((values) => request(values, 'valid'))];
  if (invalidParts.length > 0) {
    const broken = fc
      .constantFrom(...invalidParts)
      .chain((part) =>
        fc
          .tuple(valid, parts[part]!.invalid!)
          .map(([values, wrong]) => request({ ...values, [part]: wrong }, 'invalid', part)),
      );
    arbitrariesOf.push(broken, broken);
  }
  // An operation that checks a token (the probes check none).
  if (operation.security === undefined)
    arbitrariesOf.push(
      fc
        .tuple(valid, fc.constantFrom(undefined, 'Bearer not-a-token', 'Basic eDp5'))
        .map(([values, authorization]) => {
          const sent = request(values, 'unauthenticated');
          if (authorization === undefined) delete sent.headers.authorization;
          else sent.headers.authorization = authorization;
          return sent;
        }),
    );
  if (content) arbitrariesOf.push(valid.map((values) => request(values, 'media type')));
  return { cases: fc.oneof(...arbitrariesOf), refusable: invalidParts.length > 0 };
}

/** What is wrong with an answer, by the document; empty when nothing is. */
export function problemsOf(
  operation: Operation,
  sent: Case,
  status: number,
  headers: Headers,
  text: string,
): string[] {
  const problems: string[] = [];
  if (status >= 500) problems.push(`a ${status}`);
  const declared = operation.responses[String(status)];
  if (declared === undefined) return [...problems, `${status} is not declared`];
  const response = arbitraries.resolve(declared);
  const names = Object.keys(response.headers ?? {}).map((name) => name.toLowerCase());
  for (const name of DELIBERATE) {
    if (headers.has(name) && !names.includes(name)) problems.push(`${status} carries ${name}, not declared`);
  }
  for (const [name, header] of Object.entries<Schema>(response.headers ?? {})) {
    if (arbitraries.resolve(header).required && !headers.has(name)) problems.push(`${status} lacks ${name}`);
  }
  const mediaType = (headers.get('content-type') ?? '').split(';')[0]!;
  const content = response.content as Record<string, Schema> | undefined;
  if (content === undefined) {
    if (text !== '') problems.push(`${status} has a body, none declared`);
  } else if (!(mediaType in content)) {
    problems.push(`${status} is ${mediaType}, declared ${Object.keys(content).join(', ')}`);
  } else if (mediaType === 'application/json') {
    const validate = ajv.compile(
      JSON.parse(
        JSON.stringify(content[mediaType]!.schema).replaceAll('"#/components/', `"${DOC_ID}#/components/`),
      ),
    );
    if (!validate(JSON.parse(text)))
      problems.push(`${status} body ${text.slice(0, 200)}: ${ajv.errorsText(validate.errors)}`);
  }
  const expected = { valid: undefined, invalid: 400, unauthenticated: 401, 'media type': 415, limited: 429 }[
    sent.expect
  ];
  if (expected !== undefined && status !== expected)
    problems.push(`${sent.expect} request (${sent.part ?? ''}) answered ${status}`);
  if (sent.expect === 'valid' && [400, 401, 415].includes(status))
    problems.push(`a valid request answered ${status}: ${text}`);
  return problems;
}

/** Sends one case; a stream's answer is read up to its headers, then the client goes away. */
async function exchange(method: string, sent: Case, url = api.url) {
  const controller = new AbortController();
  const init = {
    method: method.toUpperCase(),
    headers: sent.headers,
    body: sent.body,
    signal: controller.signal,
  };
  const answer = await fetch(`${url}${sent.path}`, init);
  if (answer.headers.get('content-type')?.startsWith('text/event-stream')) {
    controller.abort();
    return { status: answer.status, headers: answer.headers, text: '' };
  }
  return { status: answer.status, headers: answer.headers, text: await answer.text() };
}

describe('the served document, as a suite generated from it reads it (built service)', () => {
  it.each(operations)(
    '$method $path answers only what the document declares, at its bounds too',
    async ({ path, method }) => {
      const operation = doc.paths[path][method] as Operation;
      const seen = new Map<number, number>();
      const { cases: requests, refusable } = cases(path, method);
      await fc.assert(
        fc.asyncProperty(requests, async (sent) => {
          const { status, headers, text } = await exchange(method, sent);
          seen.set(status, (seen.get(status) ?? 0) + 1);
          expect({ method, sent, problems: problemsOf(operation, sent, status, headers, text) }).toEqual({
            method,
            sent,
            problems: [],
          });
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
      // Both sides of the bounds were reached: a success and a 400.
      expect([...seen.keys()].some((status) => status < 300)).toBe(true);
      if (refusable) expect(seen.get(400)).toBeGreaterThan(0);
    },
    120_000,
  );
});

describe('429, as the document declares it on every operation (built service)', () => {
  let limited: ApiProcess;
  beforeAll(async () => {
    limited = await startApiProcess({
      env: {
        RATE_LIMIT_MAX: '1',
        AUTH_FAILURE_MAX: '1',
        WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
      },
    });
  });
  afterAll(async () => {
    await limited?.stop();
    limited?.cleanup();
  });

  it('answers every operation past the rate limit, and past the failed-authentication limit, as declared', async () => {
    const secured = operations.filter(({ path, method }) => doc.paths[path][method].security === undefined);
    const [first] = fc.sample(cases('/plants', 'get').cases, { seed: SEED, numRuns: 1 });
    await exchange('get', { ...first!, headers: AUTH }, limited.url);
    for (const { path, method } of secured) {
      const [sent] = fc
        .sample(cases(path, method).cases, { seed: SEED, numRuns: 20 })
        .filter((one) => one.expect === 'valid');
      const { status, headers, text } = await exchange(method, { ...sent!, expect: 'limited' }, limited.url);
      const problems = problemsOf(
        doc.paths[path][method],
        { ...sent!, expect: 'limited' },
        status,
        headers,
        text,
      );
      expect({ path, method, problems, retryAfter: headers.get('retry-after') }).toEqual({
        path,
        method,
        problems: [],
        retryAfter: expect.stringMatching(/^[1-9][0-9]*$/),
      });
      expect(headers.get('ratelimit-policy')).toBe('"default";q=1;w=60');
    }
    for (const { path, method } of secured) {
      const bad = {
        path: path.replace(/\{\w+\}/g, '1'),
        headers: { authorization: 'Bearer wrong' },
        expect: 'limited' as const,
      };
      await exchange(method, bad, limited.url);
      const { status, headers, text } = await exchange(method, bad, limited.url);
      expect({
        path,
        method,
        problems: problemsOf(doc.paths[path][method], bad, status, headers, text),
      }).toEqual({
        path,
        method,
        problems: [],
      });
    }
  });
});
