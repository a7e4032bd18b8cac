import { describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import { errorBody, JSON_HEADERS, postPlant, send, TOKEN, TOKEN_NAME } from '../support/http.ts';
import type { RunningApi } from '../support/in-process.ts';
import { oddTrpcPaths, sampleLines } from '../support/odd-trpc.ts';
import { testStores } from '../support/stores.ts';

/** Issued tokens: one that reads plants, one that only scrapes. */
const READER = 'reader-token-0123456789';
const SCRAPER = 'scraper-token-0123456789';

describe.each(testStores())('observability on $name', (testStore) => {
  let api: RunningApi;
  apiOnStore(testStore, (running) => ({ api } = running), {
    tokens: [
      { name: 'reader', secret: READER, scopes: ['read'] },
      { name: 'scraper', secret: SCRAPER, scopes: ['metrics'] },
    ],
  });

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

    it('answers 403 to a token without the metrics scope, which every token name would otherwise be shown to', async () => {
      const answer = await send(`${api.url}/metrics`, { headers: { authorization: `Bearer ${READER}` } });
      expect([answer.status, answer.text]).toStrictEqual([
        403,
        errorBody(403, 'This token lacks the metrics scope this operation needs.'),
      ]);
      expect(
        (await send(`${api.url}/plants`, { headers: { authorization: `Bearer ${READER}` } })).status,
      ).toBe(200);
    });

    it('answers a token with only the metrics scope, which reads no plant', async () => {
      const answer = await send(`${api.url}/metrics`, { headers: { authorization: `Bearer ${SCRAPER}` } });
      expect(answer.status).toBe(200);
      expect(answer.text).toContain('token="reader"');
      const plants = await send(`${api.url}/plants`, { headers: { authorization: `Bearer ${SCRAPER}` } });
      expect(plants.status).toBe(403);
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

    /** A sample line without its value: the series it belongs to. */
    const seriesOf = (line: string) => line.replace(/ \S+$/, '');
    const scrape = async () =>
      (await send(`${api.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text;
    /** The request counter's series whose route starts with /trpc, without their counts. */
    const trpcSeries = (text: string) =>
      sampleLines(text)
        .filter(
          (line) => line.startsWith('plant_store_http_requests_total{') && line.includes('route="/trpc'),
        )
        .map((line) => line.replace(/ \d+$/, ''));

    it('labels a /trpc request by its one procedure, "/trpc (batch)" for several calls, "/trpc" for an unknown one', async () => {
      const batchOf = (paths: string) => `${api.url}/trpc/${paths}?batch=1`;
      const post = (url: string, body: string) => send(url, { method: 'POST', headers: JSON_HEADERS, body });
      const create = '{"json":{"id":"700","name":"Fern"},"meta":{"values":{"id":["bigint"]}}}';
      expect((await post(`${api.url}/trpc/plants.create`, create)).status).toBe(200);
      expect((await post(batchOf('plants.delete'), '{}')).status).toBe(400);
      expect((await post(batchOf('plants.delete,plants.delete'), '{}')).status).toBe(400);
      expect((await post(batchOf('plants.delete,plants.create'), '{}')).status).toBe(400);
      expect((await send(batchOf('plants.list,plants.get'), { headers: JSON_HEADERS })).status).toBe(400);
      expect((await send(batchOf('plants.list,nope'), { headers: JSON_HEADERS })).status).toBe(207);
      expect((await send(`${api.url}/trpc/valueOf`, { headers: JSON_HEADERS })).status).toBe(404);
      expect(trpcSeries(await scrape())).toStrictEqual([
        `plant_store_http_requests_total{method="POST",route="/trpc/plants.create",status="200",token="${TOKEN_NAME}"}`,
        `plant_store_http_requests_total{method="POST",route="/trpc/plants.delete",status="400",token="${TOKEN_NAME}"}`,
        `plant_store_http_requests_total{method="POST",route="/trpc (batch)",status="400",token="${TOKEN_NAME}"}`,
        `plant_store_http_requests_total{method="GET",route="/trpc (batch)",status="400",token="${TOKEN_NAME}"}`,
        `plant_store_http_requests_total{method="GET",route="/trpc",status="207",token="${TOKEN_NAME}"}`,
        `plant_store_http_requests_total{method="GET",route="/trpc",status="404",token="${TOKEN_NAME}"}`,
      ]);
    });

    it('counts a method the api does not serve as "other"', async () => {
      expect((await send(`${api.url}/plants`, { method: 'PROPFIND', headers: JSON_HEADERS })).status).toBe(
        405,
      );
      expect((await send(`${api.url}/nowhere`, { method: 'MKCOL' })).status).toBe(404);
      const text = await scrape();
      expect(text).toContain(
        `plant_store_http_requests_total{method="other",route="/plants",status="405",token="${TOKEN_NAME}"} 1\n`,
      );
      expect(text).toContain(
        'plant_store_http_requests_total{method="other",route="unmatched",status="404",token="-"} 1\n',
      );
      expect(text).not.toMatch(/PROPFIND|MKCOL/);
    });

    it('keeps to 2 routes and 3 methods, at most 36 series, for 765 token-less requests to odd combinations of procedures (issue 22 row 5)', async () => {
      const before = new Set(sampleLines(await scrape()).map(seriesOf));
      for (const path of oddTrpcPaths(255)) {
        for (const method of ['GET', 'POST', 'PROPFIND']) {
          const body = method === 'GET' ? undefined : '{}';
          const answer = await send(`${api.url}${path}`, {
            method,
            headers: { 'content-type': 'application/json' },
            body,
          });
          expect(answer.status).toBeLessThan(500);
        }
      }
      const added = sampleLines(await scrape()).filter((line) => !before.has(seriesOf(line)));
      const requests = added.filter((line) => line.startsWith('plant_store_http_requests_total{'));
      console.log(
        `[observability ${testStore.name}] 765 odd /trpc requests added ${added.length} lines, ${requests.length} series`,
      );
      // The closed sets: the routes of several calls, the methods sent as labelled, and the
      // statuses /trpc answers a request without a token (207, 400, 401, 404, 405, 413).
      for (const line of requests) {
        expect(line).toMatch(
          /^plant_store_http_requests_total\{method="(GET|POST|other)",route="\/trpc( \(batch\))?",status="(207|400|401|404|405|413)",token="-"\} \d+$/,
        );
      }
      expect(requests.length).toBeLessThanOrEqual(2 * 3 * 6);
      // Each series: one counter line and 15 histogram lines (12 buckets, +Inf, _sum and _count).
      expect(added.length).toBeLessThanOrEqual(2 * 3 * 6 * 16);
    });
  });
});
