import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';

let api: ApiProcess;
beforeAll(async () => {
  api = await startApiProcess();
});
afterAll(async () => {
  await api.stop();
  api.cleanup();
});

describe('smoke', () => {
  it('creates over REST', async () => {
    const res = await fetch(`${api.url}/plants`, {
      method: 'POST',
      headers: { authorization: 'Bearer plant-store-test-token', 'content-type': 'application/json' },
      body: '{"id":1,"name":"Fern"}',
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('{"name":"Fern"}');
  });
});
