import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { READINESS_INTERVAL_MS } from '../../src/http/health.ts';
import { apiOnStore } from '../support/api-on-store.ts';
import { send, TOKEN } from '../support/http.ts';
import type { RunningApi } from '../support/in-process.ts';
import { testStores } from '../support/stores.ts';

/** How many store pings the api has made, from its own store metrics. */
async function pings(api: RunningApi): Promise<number> {
  const text = (await send(`${api.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text;
  const count = (outcome: string) =>
    Number(
      new RegExp(
        `^plant_store_store_operation_duration_seconds_count\\{operation="ping",outcome="${outcome}"\\} (\\d+)$`,
        'm',
      ).exec(text)?.[1] ?? 0,
    );
  return count('ok') + count('error');
}

describe.each(testStores())('GET /readyz on $name', (testStore) => {
  let api: RunningApi;
  apiOnStore(testStore, (running) => ({ api } = running), { env: { RATE_LIMIT_MAX: '0' } });

  it('answers a flood of callers with at most one store call a second, each answer as documented', async () => {
    const before = await pings(api);
    const started = performance.now();
    const answers: { status: number; text: string }[] = [];
    // 50 callers at once, again and again, for 2.5 s.
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (performance.now() - started < 2_500) {
          const { status, text } = await send(`${api.url}/readyz`);
          answers.push({ status, text });
          await sleep(10);
        }
      }),
    );
    const elapsed = performance.now() - started;
    const calls = (await pings(api)) - before;
    const bound = Math.floor(elapsed / READINESS_INTERVAL_MS) + 1;
    console.log(
      `[readyz ${testStore.name}] ${answers.length} answers in ${Math.round(elapsed)} ms took ${calls} store calls (bound ${bound})`,
    );
    expect(answers.length).toBeGreaterThan(200);
    expect(answers.filter((a) => a.status !== 200 || a.text !== '{"status":"ok"}')).toStrictEqual([]);
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(bound);
  });

  it('asks the store again once the interval has passed', async () => {
    expect((await send(`${api.url}/readyz`)).status).toBe(200);
    await sleep(READINESS_INTERVAL_MS + 50);
    const before = await pings(api);
    expect((await send(`${api.url}/readyz`)).status).toBe(200);
    expect((await pings(api)) - before).toBe(1);
  });
});
