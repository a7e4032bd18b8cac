import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PLANT_FIELD_NAMES, PLANT_FIELDS } from '@plant-store/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import { JSON_HEADERS, send, TOKEN } from '../support/http.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { testStores } from '../support/stores.ts';

const run = promisify(execFile);
const BIN = new URL('../../node_modules/.bin/', import.meta.url).pathname;
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

type Response = {
  $ref?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: { $ref?: string } }>;
};
type Operation = { responses: Record<string, Response>; parameters?: unknown[] };
type Document = {
  openapi: string;
  info: { version: string; license: { name: string } };
  security: Record<string, string[]>[];
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation & Record<string, unknown>>>;
  components: {
    schemas: Record<string, unknown>;
    securitySchemes: Record<string, unknown>;
    responses?: Record<string, Response>;
    headers?: Record<string, unknown>;
  };
};

/** A response, or the shared one it refers to. */
function resolve(response: Response): Response {
  if (response.$ref === undefined) return response;
  return doc.components.responses![response.$ref.slice('#/components/responses/'.length)]!;
}

let doc: Document;
let dir: string;
// The document, as the api on SQLite serves it (it does not depend on the store).
beforeAll(async () => {
  const api = await startInProcess();
  try {
    const answer = await send(`${api.url}/openapi.json`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    doc = answer.json as Document;
    dir = mkdtempSync(join(tmpdir(), 'plant-store-oas-'));
    writeFileSync(join(dir, 'openapi.json'), answer.text);
    writeFileSync(join(dir, '.spectral.yaml'), 'extends: ["spectral:oas"]\n');
  } finally {
    await api.stop();
    api.cleanup();
  }
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /openapi.json', () => {
  it('is OpenAPI 3.1.0, version 1.0.0, MIT, with bearer auth on every operation', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.info.license.name).toBe('MIT');
    expect(doc.components.securitySchemes).toEqual({
      bearerAuth: { type: 'http', scheme: 'bearer', description: expect.any(String) },
    });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
  });

  it('describes Plant, NewPlant and Error with the spec fields, types and formats', () => {
    // Every field of the table, as the spec has name and tag: text, with its length limit.
    const properties = Object.fromEntries(
      PLANT_FIELD_NAMES.map((name) => [name, { type: 'string', maxLength: PLANT_FIELDS[name].maxLength }]),
    );
    const required = PLANT_FIELD_NAMES.filter((name) => PLANT_FIELDS[name].required);
    expect(properties).toMatchObject({
      name: { type: 'string', maxLength: 200 },
      tag: { type: 'string', maxLength: 100 },
    });
    expect(doc.components.schemas).toMatchObject({
      Plant: { type: 'object', required, properties },
      NewPlant: {
        type: 'object',
        required: ['id', ...required],
        properties: { id: { type: 'integer', format: 'int64' }, ...properties },
      },
      Error: {
        type: 'object',
        required: ['error', 'message'],
        properties: { error: { type: 'integer', format: 'int32' }, message: { type: 'string' } },
      },
    });
    // What a store answers carries no limit: it may hold plants from before the limits existed.
    const stored = doc.components.schemas.PlantWithId as { properties: Record<string, object> };
    expect(stored.properties.name).toEqual({ type: 'string', description: 'The name of the plant' });
    expect(stored.properties.tag).not.toHaveProperty('maxLength');
  });

  it('documents POST /plants: required NewPlant body, 200 Plant, errors as Error', () => {
    const post = doc.paths['/plants']!.post as Operation & {
      requestBody: { required: boolean; content: Record<string, { schema: unknown }> };
    };
    expect(post.requestBody.required).toBe(true);
    expect(post.requestBody.content['application/json']!.schema).toEqual({
      $ref: '#/components/schemas/NewPlant',
    });
    expect(post.responses['200']!.content!['application/json']!.schema).toEqual({
      $ref: '#/components/schemas/Plant',
    });
    for (const [status, response] of Object.entries(post.responses)) {
      if (status === '200') continue;
      expect(resolve(response).content!['application/json']!.schema).toEqual({
        $ref: '#/components/schemas/Error',
      });
    }
  });

  it('declares on every operation the answers every operation has, with their headers', () => {
    for (const [path, item] of Object.entries(doc.paths)) {
      if (path === '/healthz' || path === '/readyz' || path === '/auth/provider') continue;
      for (const [method, operation] of Object.entries(item)) {
        const where = `${method} ${path}`;
        for (const status of ['401', '403', '429', '500', '503'])
          expect({ where, status, declared: status in operation.responses }).toEqual({
            where,
            status,
            declared: true,
          });
        for (const [status, response] of Object.entries(operation.responses)) {
          const headers = Object.keys(resolve(response).headers ?? {});
          expect({ where, status, headers }).toEqual({
            where,
            status,
            headers: expect.arrayContaining(['X-Request-Id', 'RateLimit', 'RateLimit-Policy']),
          });
        }
        expect(Object.keys(resolve(operation.responses['401']!).headers!)).toContain('WWW-Authenticate');
        expect(Object.keys(resolve(operation.responses['429']!).headers!)).toContain('Retry-After');
        expect(operation.parameters).toContainEqual({ $ref: '#/components/parameters/RequestId' });
      }
    }
    expect(doc.components.headers!.RetryAfter).toMatchObject({ required: true });
    expect(doc.components.responses!.MethodNotAllowed).toMatchObject({
      headers: { Allow: { $ref: '#/components/headers/Allow' } },
    });
  });

  it('declares 304 with its ETag on GET /plants/{id}, and Content-Location on the create answer', () => {
    const get = doc.paths['/plants/{id}']!.get!;
    expect(get.responses['304']).toEqual({ $ref: '#/components/responses/NotModified' });
    expect(resolve(get.responses['304']!)).not.toHaveProperty('content');
    expect(resolve(get.responses['304']!).headers!.ETag).toEqual({ $ref: '#/components/headers/ETag' });
    expect(doc.paths['/plants']!.get!.responses).not.toHaveProperty('304');
    expect(doc.paths['/plants']!.post!.responses['200']!.headers!['Content-Location']).toEqual({
      $ref: '#/components/headers/Content-Location',
    });
  });

  it('declares the bounds the server enforces on Idempotency-Key, after and Last-Event-ID', () => {
    const parameter = (path: string, method: string, name: string) =>
      (doc.paths[path]![method]!.parameters as { name?: string; schema: Record<string, unknown> }[]).find(
        (candidate) => candidate.name === name,
      )!.schema;
    expect(parameter('/plants', 'post', 'Idempotency-Key')).toMatchObject({ type: 'string', maxLength: 257 });
    expect(parameter('/plants', 'post', 'Idempotency-Key').pattern).toContain('{1,255}');
    expect(parameter('/plants/events', 'get', 'after')).toMatchObject({
      type: 'integer',
      format: 'int64',
      minimum: 0,
    });
    expect(parameter('/plants/events', 'get', 'Last-Event-ID')).toMatchObject({
      type: 'integer',
      format: 'int64',
      minimum: 0,
    });
  });

  it('declares a webhook per event type, each with its webhook-event and its body, without bearer auth', () => {
    expect(Object.keys(doc.webhooks)).toStrictEqual([
      '/plant/webhook',
      'plant.updated',
      'plant.deleted',
      'webhook.ping',
    ]);
    const bodies = {
      '/plant/webhook': ['plant.created', 'NewPlant'],
      'plant.updated': ['plant.updated', 'PlantUpdatedWebhook'],
      'plant.deleted': ['plant.deleted', 'PlantDeletedWebhook'],
      'webhook.ping': ['webhook.ping', 'WebhookPing'],
    };
    for (const [name, [event, schema]] of Object.entries(bodies)) {
      expect(Object.keys(doc.webhooks[name]!)).toStrictEqual(['post']);
      const post = doc.webhooks[name]!.post!;
      expect(post).toMatchObject({
        security: [],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } },
        },
      });
      expect(Object.keys(post.responses)).toStrictEqual(['200']);
      const parameters = post.parameters as { in: string; name: string; required: boolean; schema: object }[];
      expect(parameters.map(({ in: where, name, required }) => ({ where, name, required }))).toStrictEqual(
        ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'webhook-event'].map((name) => ({
          where: 'header',
          name,
          required: true,
        })),
      );
      expect(parameters[3]!.schema).toMatchObject({ type: 'string', const: event });
    }
    expect(doc.webhooks['/plant/webhook']!.post!.summary).toBe(
      'Information about a new plant added to the store',
    );
    expect(doc.components.schemas.PlantUpdatedWebhook).toMatchObject({
      required: ['id', 'name', 'version', 'changed'],
    });
    expect(doc.components.schemas.PlantDeletedWebhook).toMatchObject({ required: ['id'] });
    expect(doc.components.schemas.WebhookPing).toMatchObject({
      required: ['type', 'endpointId', 'timestamp'],
    });
  });

  it('lints with 0 errors under Redocly recommended and spectral:oas', async () => {
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
    const redocly = await run(
      `${BIN}redocly`,
      ['lint', join(dir, 'openapi.json'), '--extends', 'recommended'],
      {
        env,
      },
    );
    expect(redocly.stderr).toContain('Your API description is valid');
    const report = join(dir, 'spectral.json');
    await run(
      `${BIN}spectral`,
      ['lint', join(dir, 'openapi.json'), '-r', join(dir, '.spectral.yaml'), '-f', 'json', '-o', report],
      { env },
    );
    const problems = JSON.parse(readFileSync(report, 'utf8')) as { severity: number; code: string }[];
    expect(problems.filter((problem) => problem.severity === 0)).toEqual([]);
  }, 60_000);
});

describe.each(testStores())('the operations served on $name', (testStore) => {
  let api: RunningApi;
  apiOnStore(testStore, (running) => ({ api } = running), {
    env: {
      WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_ENDPOINTS_PER_TOKEN: '1',
      WEBHOOK_ALLOW_PRIVATE_URLS: '1',
    },
  });

  it('documents exactly the operations served', async () => {
    for (const path of Object.keys(doc.paths)) {
      for (const method of METHODS) {
        const documented = method.toLowerCase() in doc.paths[path]!;
        const answer = await send(`${api.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
        });
        // An operation that is not served answers 404 or 405; a served one anything else (401 without a token).
        const served = answer.status !== 404 && answer.status !== 405;
        expect({ path, method, served }).toEqual({ path, method, served: documented });
      }
    }
    expect((await send(`${api.url}/plant`, { method: 'POST' })).status).toBe(404);
  });

  it('documents every status a request can provoke, for every operation', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const big = `{"name":"${'x'.repeat(70_000)}"}`;
    // [documented path, method, request path, headers, body]
    const requests: [string, string, string, Record<string, string>, string?][] = [
      ['/plants', 'post', '/plants', JSON_HEADERS, '{"id":1,"name":"Fern"}'],
      ['/plants', 'post', '/plants', JSON_HEADERS, '{"id":1,"name":"Fern"}'],
      ['/plants', 'post', '/plants', JSON_HEADERS, '{"id":"x"}'],
      ['/plants', 'post', '/plants', {}, '{'],
      ['/plants', 'post', '/plants', { ...auth, 'content-type': 'text/plain' }, 'x'],
      ['/plants', 'post', '/plants', JSON_HEADERS, big],
      ['/plants', 'get', '/plants', auth],
      ['/plants', 'get', '/plants?limit=0', auth],
      ['/plants', 'get', '/plants', {}],
      ['/plants/{id}', 'get', '/plants/1', auth],
      ['/plants/{id}', 'get', '/plants/2', auth],
      ['/plants/{id}', 'get', '/plants/x', auth],
      ['/plants/{id}', 'get', '/plants/1', {}],
      ['/plants/{id}', 'delete', '/plants/1', auth],
      ['/plants/{id}', 'delete', '/plants/1', auth],
      ['/plants/{id}', 'delete', '/plants/x', auth],
      ['/plants/{id}', 'delete', '/plants/1', {}],
      ['/healthz', 'get', '/healthz', {}],
      ['/readyz', 'get', '/readyz', {}],
      ...endpointRequests(auth),
    ];
    const provoked = new Map<string, Set<number>>();
    const made = { created: '', pinged: '' };
    for (const [path, method, template, headers, body] of requests) {
      const url = template.replace('{created}', made.created).replace('{pinged}', made.pinged);
      const answer = await send(`${api.url}${url}`, { method: method.toUpperCase(), headers, body });
      const key = `${method} ${path}`;
      if (answer.status === 201) made.created = (answer.json as { id: string }).id;
      if (key === 'post /webhook-endpoints/{id}/ping' && answer.status === 202)
        made.pinged = (answer.json as { id: string }).id;
      provoked.set(key, (provoked.get(key) ?? new Set()).add(answer.status));
    }
    expect(Object.fromEntries([...provoked].map(([key, statuses]) => [key, [...statuses].sort()]))).toEqual({
      'post /plants': [200, 400, 401, 409, 413, 415],
      'get /plants': [200, 400, 401],
      'get /plants/{id}': [200, 400, 401, 404],
      'delete /plants/{id}': [204, 400, 401, 404],
      'get /healthz': [200],
      'get /readyz': [200],
      'post /webhook-endpoints': [201, 400, 401, 409, 415],
      'get /webhook-endpoints': [200, 401],
      'get /webhook-endpoints/{id}': [200, 400, 404],
      'delete /webhook-endpoints/{id}': [204, 404],
      'post /webhook-endpoints/{id}/rotate-secret': [200, 404],
      'get /webhook-endpoints/{id}/deliveries': [200, 400, 404],
      'post /webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver': [202, 400, 404],
      'post /webhook-endpoints/{id}/ping': [202, 404],
    });
    for (const [key, statuses] of provoked) {
      const [method, path] = key.split(' ') as [string, string];
      const documented = Object.keys(doc.paths[path]![method]!.responses).map(Number);
      for (const status of statuses)
        expect({ key, status, documented: documented.includes(status) }).toEqual({
          key,
          status,
          documented: true,
        });
    }
  });
});

const REDELIVER = '/webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver';

/**
 * Requests that provoke the webhook endpoint operations' statuses, in order. The token may have one
 * endpoint (WEBHOOK_ENDPOINTS_PER_TOKEN=1): `{created}` stands for the one the first request
 * registers, `{pinged}` for the delivery its ping enqueues.
 */
function endpointRequests(
  auth: Record<string, string>,
): [string, string, string, Record<string, string>, string?][] {
  const json = { ...auth, 'content-type': 'application/json' };
  const missing = `we_${'0'.repeat(24)}`;
  const base = '/webhook-endpoints/{created}';
  return [
    ['/webhook-endpoints', 'post', '/webhook-endpoints', json, '{"url":"http://127.0.0.1:9/x"}'],
    ['/webhook-endpoints', 'post', '/webhook-endpoints', json, '{"url":"http://127.0.0.1:9/y"}'],
    ['/webhook-endpoints', 'post', '/webhook-endpoints', json, '{"url":"gopher://127.0.0.1/x"}'],
    ['/webhook-endpoints', 'post', '/webhook-endpoints', {}, '{}'],
    ['/webhook-endpoints', 'post', '/webhook-endpoints', { ...auth, 'content-type': 'text/plain' }, 'x'],
    ['/webhook-endpoints', 'get', '/webhook-endpoints', auth],
    ['/webhook-endpoints', 'get', '/webhook-endpoints', {}],
    ['/webhook-endpoints/{id}', 'get', base, auth],
    ['/webhook-endpoints/{id}', 'get', '/webhook-endpoints/x', auth],
    ['/webhook-endpoints/{id}', 'get', `/webhook-endpoints/${missing}`, auth],
    ['/webhook-endpoints/{id}/rotate-secret', 'post', `${base}/rotate-secret`, auth],
    ['/webhook-endpoints/{id}/rotate-secret', 'post', `/webhook-endpoints/${missing}/rotate-secret`, auth],
    ['/webhook-endpoints/{id}/ping', 'post', `${base}/ping`, auth],
    ['/webhook-endpoints/{id}/ping', 'post', `/webhook-endpoints/${missing}/ping`, auth],
    ['/webhook-endpoints/{id}/deliveries', 'get', `${base}/deliveries`, auth],
    ['/webhook-endpoints/{id}/deliveries', 'get', `${base}/deliveries?limit=0`, auth],
    ['/webhook-endpoints/{id}/deliveries', 'get', `/webhook-endpoints/${missing}/deliveries`, auth],
    [REDELIVER, 'post', `${base}/deliveries/{pinged}/redeliver`, auth],
    [REDELIVER, 'post', `${base}/deliveries/msg_${'0'.repeat(32)}/redeliver`, auth],
    [REDELIVER, 'post', `${base}/deliveries/x/redeliver`, auth],
    ['/webhook-endpoints/{id}', 'delete', base, auth],
    ['/webhook-endpoints/{id}', 'delete', base, auth],
  ];
}
