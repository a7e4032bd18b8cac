import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, startApiProcess } from './support/api-process.ts';
import { JSON_HEADERS, postPlant, send, TOKEN } from './support/http.ts';

const run = promisify(execFile);
const BIN = new URL('../node_modules/.bin/', import.meta.url).pathname;
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

type Operation = { responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }> };
type Document = {
  openapi: string;
  info: { version: string; license: { name: string } };
  security: Record<string, string[]>[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
};

let api: ApiProcess;
let doc: Document;
let dir: string;
beforeAll(async () => {
  api = await startApiProcess();
  const answer = await send(`${api.url}/openapi.json`);
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
  doc = answer.json as Document;
  dir = mkdtempSync(join(tmpdir(), 'plant-store-oas-'));
  writeFileSync(join(dir, 'openapi.json'), answer.text);
  writeFileSync(join(dir, '.spectral.yaml'), 'extends: ["spectral:oas"]\n');
});
afterAll(async () => {
  await api?.stop();
  api?.cleanup();
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
    expect(doc.components.schemas).toMatchObject({
      Plant: {
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string' }, tag: { type: 'string' } },
      },
      NewPlant: {
        type: 'object',
        required: ['id', 'name'],
        properties: {
          id: { type: 'integer', format: 'int64' },
          name: { type: 'string' },
          tag: { type: 'string' },
        },
      },
      Error: {
        type: 'object',
        required: ['error', 'message'],
        properties: { error: { type: 'integer', format: 'int32' }, message: { type: 'string' } },
      },
    });
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
      expect(response.content!['application/json']!.schema).toEqual({ $ref: '#/components/schemas/Error' });
    }
  });

  it('documents exactly the operations served', async () => {
    for (const path of Object.keys(doc.paths)) {
      for (const method of METHODS) {
        const documented = method.toLowerCase() in doc.paths[path]!;
        const answer = await send(`${api.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
        });
        // A served operation answers without a token with 401; an unserved one with 404/405.
        expect({ path, method, served: answer.status === 401 }).toEqual({ path, method, served: documented });
      }
    }
    expect((await send(`${api.url}/plant`, { method: 'POST' })).status).toBe(404);
  });

  it('documents every error status a request can provoke', async () => {
    const provoked = new Set<number>();
    const record = async (answer: Promise<{ status: number }>) => provoked.add((await answer).status);
    await record(postPlant(api.url, '{"id":1,"name":"Fern"}'));
    await record(postPlant(api.url, '{"id":1,"name":"Fern"}'));
    await record(postPlant(api.url, '{"id":"x"}'));
    await record(postPlant(api.url, '{', {}));
    await record(postPlant(api.url, 'x', { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' }));
    await record(postPlant(api.url, `{"name":"${'x'.repeat(70_000)}"}`, JSON_HEADERS));
    expect([...provoked].sort()).toEqual([200, 400, 401, 409, 413, 415]);
    const documented = Object.keys(doc.paths['/plants']!.post!.responses).map(Number);
    for (const status of provoked) expect(documented).toContain(status);
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
