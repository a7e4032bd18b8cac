/**
 * Issue 40, row 8: tracing pointed at a collector that refuses connections, or that accepts them
 * and never answers. Requests are unharmed, and the operator is told, in the api's log, that spans
 * are dropped and why: one `warn` line at once and then at most one a minute, naming the collector
 * by its origin (never its credentials), and one `info` line once the collector takes spans again
 * (docs/tracing.md).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';
import { type BlackHole, startBlackHole } from '../support/black-hole.ts';
import { send, TOKEN } from '../support/http.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.ts';
import { freePort } from '../support/webhook-receiver.ts';

const SECRETS = ['collector-user', 'collector-pass', 'HEADER-SECRET'];

const running: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const each of running.splice(0).reverse()) await each.close();
});

async function startApi(endpoint: string): Promise<ApiProcess> {
  const api = await startApiProcess({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=HEADER-SECRET',
      // An export that gets no answer fails after 300 ms (10 s by default).
      OTEL_EXPORTER_OTLP_TIMEOUT: '300',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    },
  });
  running.push({
    close: async () => {
      await api.stop();
      api.cleanup();
    },
  });
  return api;
}

/** The api's log lines with this message, parsed. */
const logged = (api: ApiProcess, msg: string) =>
  api.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === msg);

/** Requests (each makes spans) until `done` holds; each must be answered 200. */
async function requestUntil(api: ApiProcess, done: () => boolean, timeoutMs = 15_000): Promise<number> {
  const started = performance.now();
  let sent = 0;
  while (!done()) {
    if (performance.now() - started > timeoutMs) throw new Error(`not done after ${sent} requests`);
    const answer = await send(`${api.url}/plants`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(answer.status).toBe(200);
    sent += 1;
    await sleep(50);
  }
  return sent;
}

describe('tracing to a collector that is down (built service)', () => {
  it('logs one warning for a collector that refuses connections, and one line when it takes spans again', async () => {
    const port = await freePort();
    const api = await startApi(`http://collector-user:collector-pass@127.0.0.1:${port}`);
    const collector = `http://127.0.0.1:${port}`;

    await requestUntil(api, () => logged(api, 'tracing: spans dropped').length > 0);
    // Another 2 s of traffic: about 40 more exports, each refused at once.
    const until = performance.now() + 2_000;
    await requestUntil(api, () => performance.now() > until);
    expect(logged(api, 'tracing: spans dropped')).toStrictEqual([
      {
        level: 40,
        time: expect.any(Number),
        service: 'plant-store-api',
        collector,
        dropped: expect.any(Number),
        reason: `connect ECONNREFUSED 127.0.0.1:${port}`,
        msg: 'tracing: spans dropped',
      },
    ]);
    expect(logged(api, 'tracing: spans dropped')[0]!.dropped).toBeGreaterThan(0);

    // The collector comes up on its port: the next export succeeds.
    const receiver: OtlpReceiver = await startOtlpReceiver({ port });
    running.push(receiver);
    await requestUntil(api, () => logged(api, 'tracing: the collector takes spans again').length > 0);
    await receiver.waitFor((spans) => spans.some((span) => span.name === 'GET /plants'));
    const [back] = logged(api, 'tracing: the collector takes spans again');
    expect(back).toStrictEqual({
      level: 30,
      time: expect.any(Number),
      service: 'plant-store-api',
      collector,
      dropped: expect.any(Number),
      msg: 'tracing: the collector takes spans again',
    });
    expect(logged(api, 'tracing: the collector takes spans again')).toHaveLength(1);
    expect(logged(api, 'tracing: spans dropped')).toHaveLength(1);
    for (const secret of SECRETS) expect(api.logs.join('\n')).not.toContain(secret);
  });

  it('logs one warning for a collector that accepts connections and never answers', async () => {
    const hole: BlackHole = await startBlackHole();
    running.push(hole);
    const api = await startApi(hole.url.replace('http://', 'http://collector-user:collector-pass@'));

    await requestUntil(api, () => logged(api, 'tracing: spans dropped').length > 0);
    // Each export opens a connection once the one before has timed out: three more, two more failed.
    const accepted = hole.accepted;
    await requestUntil(api, () => hole.accepted >= accepted + 3);
    expect(logged(api, 'tracing: spans dropped')).toStrictEqual([
      {
        level: 40,
        time: expect.any(Number),
        service: 'plant-store-api',
        collector: hole.url,
        dropped: expect.any(Number),
        reason: 'Request timed out',
        msg: 'tracing: spans dropped',
      },
    ]);
    expect(logged(api, 'tracing: the collector takes spans again')).toStrictEqual([]);
    for (const secret of SECRETS) expect(api.logs.join('\n')).not.toContain(secret);
  });
});
