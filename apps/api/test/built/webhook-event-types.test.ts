import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';
import { errorBody, postPlant, send, TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';
import { FAST } from '../support/webhook-fixtures.ts';
import { newWebhookSecret, type Receiver, startReceiver } from '../support/webhook-receiver.ts';

const HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const MERGE_PATCH = { ...HEADERS, 'content-type': 'application/merge-patch+json' };

type Endpoint = { id: string; secret: string; events: string[] };

/** The built service with registered endpoints allowed on loopback, and an operator subscriber. */
describe.each(testStores())('webhook event types on $name (built service)', (testStore) => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups.length = 0;
  });

  async function start(): Promise<{ api: ApiProcess; operator: Receiver; store: TestStoreInstance }> {
    const store = await testStore.setup();
    cleanups.push(() => store.teardown());
    const operatorSecret = newWebhookSecret();
    const operator = await startReceiver(operatorSecret);
    cleanups.push(() => operator.close());
    const api = await startApiProcess({
      env: {
        ...store.env,
        ...FAST,
        WEBHOOK_ALLOW_PRIVATE_URLS: '1',
        WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
        WEBHOOK_URLS: `${operator.url}/operator`,
        WEBHOOK_SECRET: operatorSecret,
      },
    });
    cleanups.push(async () => {
      await api.stop();
      api.cleanup();
    });
    return { api, operator, store };
  }

  async function register(api: ApiProcess, body: object): Promise<{ endpoint: Endpoint; hook: Receiver }> {
    let secret = '';
    const hook = await startReceiver(() => secret);
    cleanups.push(() => hook.close());
    const answer = await send(`${api.url}/webhook-endpoints`, {
      method: 'POST',
      headers: HEADERS,
      body: JSON.stringify({ url: `${hook.url}/hook`, ...body }),
    });
    expect(answer.status).toBe(201);
    const endpoint = answer.json as Endpoint;
    secret = endpoint.secret;
    return { endpoint, hook };
  }

  it('sends each endpoint the types it chose (plant.created by default), with webhook-event, and operators only new plants', async () => {
    const { api, operator } = await start();
    const plain = await register(api, {});
    expect(plain.endpoint.events).toEqual(['plant.created']);
    const changes = await register(api, { events: ['plant.deleted', 'plant.updated', 'plant.deleted'] });
    expect(changes.endpoint.events).toEqual(['plant.updated', 'plant.deleted']);

    expect((await postPlant(api.url, '{"id":9223372036854775807,"name":"Fern","tag":"green"}')).status).toBe(
      200,
    );
    const updated = await send(`${api.url}/plants/9223372036854775807`, {
      method: 'PATCH',
      headers: MERGE_PATCH,
      body: '{"name":"Big fern","tag":null}',
    });
    expect(updated.status).toBe(200);
    const version = updated.headers.get('etag')!.slice(1, -1);
    expect(
      (await send(`${api.url}/plants/9223372036854775807`, { method: 'DELETE', headers: HEADERS })).status,
    ).toBe(204);

    await changes.hook.waitFor((received) => received.length === 2);
    await plain.hook.waitFor((received) => received.length === 1);
    await operator.waitFor((received) => received.length === 1);
    const summary = (hook: Receiver) =>
      hook.received
        .map(({ event, body, verified }) => ({ event, body, verified }))
        .sort((a, b) => (a.event! < b.event! ? -1 : 1));
    expect(summary(changes.hook)).toEqual([
      { event: 'plant.deleted', body: '{"id":9223372036854775807}', verified: true },
      {
        event: 'plant.updated',
        body: `{"id":9223372036854775807,"name":"Big fern","version":${version},"changed":["name","tag"]}`,
        verified: true,
      },
    ]);
    const created = {
      event: 'plant.created',
      body: '{"id":9223372036854775807,"name":"Fern","tag":"green"}',
      verified: true,
    };
    expect(summary(plain.hook)).toEqual([created]);
    expect(summary(operator)).toEqual([created]);
  });

  it('changes an endpoint’s choice with PATCH, without re-registering; deliveries list their event', async () => {
    const { api } = await start();
    const { endpoint, hook } = await register(api, { description: 'note' });
    const patch = (body: string, id = endpoint.id) =>
      send(`${api.url}/webhook-endpoints/${id}`, { method: 'PATCH', headers: MERGE_PATCH, body });
    const changed = await patch('{"events":["plant.deleted"],"description":null}');
    expect(changed.status).toBe(200);
    expect(changed.json).toMatchObject({
      id: endpoint.id,
      events: ['plant.deleted'],
      description: null,
      disabled: null,
    });
    expect(changed.json).not.toHaveProperty('secret');
    const read = await send(`${api.url}/webhook-endpoints/${endpoint.id}`, { headers: HEADERS });
    expect(read.json).toEqual(changed.json);

    expect((await postPlant(api.url, '{"id":5,"name":"Moss"}')).status).toBe(200);
    expect((await send(`${api.url}/plants/5`, { method: 'DELETE', headers: HEADERS })).status).toBe(204);
    await hook.waitFor((received) => received.length === 1);
    expect(hook.received[0]).toMatchObject({ event: 'plant.deleted', body: '{"id":5}', verified: true });
    const listed = await send(`${api.url}/webhook-endpoints/${endpoint.id}/deliveries`, { headers: HEADERS });
    expect((listed.json as { event: string }[]).map((delivery) => delivery.event)).toEqual(['plant.deleted']);

    for (const [body, message] of [
      ['{"events":[]}', 'Invalid request body: events must list at least one event type.'],
      [
        '{"events":["plant.renamed"]}',
        'Invalid request body: events.0 must be one of the event types plant.created, plant.updated, plant.deleted (not "plant.renamed").',
      ],
      ['{"url":"https://example.com"}', 'The request body has an unknown field: url.'],
    ] as const) {
      const refused = await patch(body);
      expect(refused.status).toBe(400);
      expect(refused.text).toBe(errorBody(400, message));
    }
    const missing = await patch('{"events":["plant.created"]}', 'we_000000000000000000000000');
    expect(missing.status).toBe(404);
    expect(missing.text).toBe(
      errorBody(404, 'There is no webhook endpoint with id we_000000000000000000000000.'),
    );
    expect(
      (await send(`${api.url}/webhook-endpoints/${endpoint.id}`, { headers: HEADERS })).json,
    ).toMatchObject({
      events: ['plant.deleted'],
    });
  });
});
