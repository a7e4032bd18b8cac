import { describe, expect, it } from 'vitest';
import { apiOnStore } from './support/api-on-store.ts';
import { JSON_HEADERS, postPlant, send, TOKEN, TOKEN_NAME } from './support/http.ts';
import type { RunningApi } from './support/in-process.ts';
import { testStores } from './support/stores.ts';

describe.each(testStores())('observability on $name', (testStore) => {
  let api: RunningApi;
  apiOnStore(testStore, (running) => ({ api } = running));

  describe('access log', () => {
    it('writes one line per request with method, route template, status, duration, token name and request id', async () => {
      await postPlant(api.url, '{"id":5,"name":"Fern"}', { ...JSON_HEADERS, 'x-request-id': 'trace-1' });
      await send(`${api.url}/plants/5`, {
        headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'trace-2' },
      });
      await send(`${api.url}/plants/5`, {
        headers: { authorization: 'Bearer wrong', 'x-request-id': 'trace-3' },
      });
      const lines = api.logs
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => typeof line.reqId === 'string' && line.reqId.startsWith('trace-'));
      expect(
        lines.map(({ reqId, method, route, status, tokenName, msg }) => ({
          reqId,
          method,
          route,
          status,
          tokenName,
          msg,
        })),
      ).toEqual([
        {
          reqId: 'trace-1',
          method: 'POST',
          route: '/plants',
          status: 200,
          tokenName: TOKEN_NAME,
          msg: 'request',
        },
        {
          reqId: 'trace-2',
          method: 'GET',
          route: '/plants/{id}',
          status: 200,
          tokenName: TOKEN_NAME,
          msg: 'request',
        },
        {
          reqId: 'trace-3',
          method: 'GET',
          route: '/plants/{id}',
          status: 401,
          tokenName: '-',
          msg: 'request',
        },
      ]);
      expect(lines.every((line) => typeof line.ms === 'number')).toBe(true);
    });

    it('never contains a token secret or a request body', async () => {
      await postPlant(api.url, '{"id":6,"name":"secret-plant-name"}', { ...JSON_HEADERS });
      await postPlant(api.url, '{"id":"bad","name":"another-secret-body"}', { ...JSON_HEADERS });
      const text = api.logs.join('\n');
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain('wrong');
      expect(text).not.toContain('secret-plant-name');
      expect(text).not.toContain('another-secret-body');
    });

    it('generates a request id when none (or a malformed one) is sent', async () => {
      const answer = await send(`${api.url}/healthz`, { headers: { 'x-request-id': 'bad id with spaces' } });
      expect(answer.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });
  });

  describe('GET /metrics', () => {
    it('needs a token', async () => {
      const answer = await send(`${api.url}/metrics`);
      expect(answer.status).toBe(401);
    });

    it('counts requests by route template, status and token name, with latency histograms and store timings', async () => {
      await send(`${api.url}/plants/99`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const answer = await send(`${api.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0.0.4/);
      const text = answer.text;
      expect(text).toMatch(
        new RegExp(
          `plant_store_http_requests_total\\{method="POST",route="/plants",status="200",token="${TOKEN_NAME}"\\} \\d+`,
        ),
      );
      expect(text).toMatch(
        new RegExp(
          `plant_store_http_requests_total\\{method="GET",route="/plants/\\{id\\}",status="404",token="${TOKEN_NAME}"\\} 1`,
        ),
      );
      expect(text).toContain(
        'plant_store_http_request_duration_seconds_bucket{le="0.001",method="POST",route="/plants",status="200"}',
      );
      expect(text).toMatch(
        /plant_store_store_operation_duration_seconds_count\{operation="create",outcome="ok"\} \d+/,
      );
      expect(text).toContain('process_resident_memory_bytes');
      expect(text).toContain('nodejs_eventloop_lag_seconds');
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain('/plants/99');
    });
  });
});
