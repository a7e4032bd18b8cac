import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { postPlant, TOKEN } from '../support/http.ts';

const STREAMS = 5;

/** Reads `response`'s body until `done(text)` holds. */
async function readUntil(response: Response, done: (text: string) => boolean): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!done(text)) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return text;
}

describe('an event sent to many tRPC subscriptions', () => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startInProcess();
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
  });

  it('is serialized once, whatever the number of streams carrying it', async () => {
    const url = `${api.url}/trpc/plants.events?input=${encodeURIComponent('{"json":{}}')}`;
    const streams = await Promise.all(
      Array.from({ length: STREAMS }, () => fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } })),
    );
    const serialize = vi.spyOn(superjson, 'serialize');
    try {
      const reads = streams.map((stream) => readUntil(stream, (text) => text.includes('"Fern"')));
      // Each stream is open (its `connected` event sent) before the create.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await postPlant(api.url, '{"id":7,"name":"Fern"}')).status).toBe(200);
      for (const text of await Promise.all(reads)) {
        expect(text).toContain('"plant":{"id":"7","name":"Fern","version":"1"}');
        expect(text).toMatch(/^id: 1$/m);
      }
      const ofTheEvent = serialize.mock.calls.filter(
        ([value]) => (value as { type?: string })?.type === 'plant.created',
      );
      expect(ofTheEvent).toHaveLength(1);
    } finally {
      serialize.mockRestore();
    }
  });
});
