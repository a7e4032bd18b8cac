/**
 * The server span's status and name at the edges the built-service test does not reach: an
 * unexpected error (500), a method HTTP does not name, and a request that is not sampled.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import Koa from 'koa';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { errorMiddleware } from '../../src/http/error-middleware.ts';
import { traceMiddleware } from '../../src/http/trace-middleware.ts';
import { startTracing } from '../../src/tracing/sdk.ts';

const exporter = new InMemorySpanExporter();
const tracing = startTracing(
  loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_BSP_SCHEDULE_DELAY: '1' }).tracing!,
  { exporter },
);
const lines: string[] = [];
const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });

let server: Server;
let url: string;
beforeAll(async () => {
  const app = new Koa();
  app.use(traceMiddleware(tracing.tracer, log));
  app.use(errorMiddleware(log));
  app.use((ctx) => {
    ctx.state.route = '/boom';
    if (ctx.method === 'GET') throw new Error('SELECT secret FROM somewhere failed');
    ctx.body = 'ok';
  });
  server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await tracing.shutdown();
});
beforeEach(() => exporter.reset());

async function spans() {
  await new Promise((resolve) => setTimeout(resolve, 30));
  return exporter.getFinishedSpans();
}

describe('the server span', () => {
  it('is an error on a 500, by its status, and its log line carries its ids; never the message', async () => {
    const answer = await fetch(`${url}/boom?token=x`);
    expect(answer.status).toBe(500);
    const [span] = await spans();
    expect(span).toMatchObject({
      name: 'GET /boom',
      status: { code: 2 },
      attributes: {
        'http.route': '/boom',
        'url.path': '/boom',
        'http.response.status_code': 500,
        'error.type': '500',
      },
    });
    expect(JSON.stringify(span!.attributes)).not.toContain('secret');
    expect(JSON.stringify(span!.attributes)).not.toContain('token');
    const failure = lines.map((line) => JSON.parse(line)).find((line) => line.msg === 'request failed');
    expect(failure).toMatchObject({
      trace_id: span!.spanContext().traceId,
      span_id: span!.spanContext().spanId,
    });
  });

  it('names a method HTTP does not know HTTP, keeping the method it got', async () => {
    const answer = await fetch(`${url}/boom`, { method: 'PROPFIND' });
    expect(answer.status).toBe(200);
    const [span] = await spans();
    expect(span).toMatchObject({
      name: 'HTTP',
      attributes: { 'http.request.method': '_OTHER', 'http.request.method_original': 'PROPFIND' },
    });
  });
});
