import { inProcessPerFile } from '@plant-store/api/testing/in-process';
import { startProxy, type Proxy as TcpProxy } from '@plant-store/api/testing/tcp-proxy';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createRestClient,
  createTrpcClient,
  type RestClient,
  type WebhookDelivery,
} from '../../src/index.ts';
import { closedPort, rejectionOf } from '../support/clients.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

const TOKEN = 'client-endpoints-token-0123456789';
const OTHER = 'client-endpoints-other-0123456789';
const ENDPOINT_ID = /^we_[0-9a-f]{24}$/;
const DELIVERY_ID = /^msg_[0-9a-f]{32}$/;
const NO_DELIVERY = `msg_${'0'.repeat(32)}`;

// Loopback receivers need WEBHOOK_ALLOW_PRIVATE_URLS; a short poll interval keeps the test quick.
const api = inProcessPerFile({
  token: `${TOKEN},${OTHER}`,
  env: { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_POLL_INTERVAL_MS: '100' },
});

let receiver: Receiver;
let rest: RestClient;
let other: RestClient;
beforeAll(async () => {
  receiver = await startReceiver();
  rest = createRestClient({ baseUrl: api.url, token: TOKEN });
  other = createRestClient({ baseUrl: api.url, token: OTHER });
});
afterAll(async () => {
  await receiver?.close();
});

/** The delivery, once the worker has recorded its outcome (it is no longer pending). */
async function settled(id: string, deliveryId: string): Promise<WebhookDelivery> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { deliveries } = await rest.endpoints.deliveries(id, { limit: 100 });
    const found = deliveries.find((delivery) => delivery.id === deliveryId);
    if (found !== undefined && found.status !== 'pending') return found;
    if (Date.now() > deadline) throw new Error(`delivery ${deliveryId} is still ${found?.status} after 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('REST client: endpoints', () => {
  it('creates, reads, pings, pages, redelivers, rotates and deletes an endpoint', async () => {
    const url = `${receiver.url}/hooks/rest`;
    const created = await rest.endpoints.create({ url, description: 'REST test' });
    expect(created).toStrictEqual({
      id: expect.stringMatching(ENDPOINT_ID),
      url,
      description: 'REST test',
      secret: expect.stringMatching(/^whsec_/),
      createdAt: expect.any(String),
      events: ['plant.created'],
      disabled: null,
    });
    const { secret, ...endpoint } = created;
    expect(await rest.endpoints.get(endpoint.id)).toStrictEqual(endpoint);
    expect(await rest.endpoints.list()).toStrictEqual([endpoint]);

    const ping = await rest.endpoints.ping(endpoint.id);
    expect(ping).toStrictEqual({
      id: expect.stringMatching(DELIVERY_ID),
      event: 'webhook.ping',
      status: 'pending',
      attempts: 0,
      lastResponseCode: null,
      lastError: null,
      nextAttemptAt: expect.any(String),
      createdAt: expect.any(String),
    });
    const [first] = await receiver.until(1);
    expect(first!.headers['webhook-id']).toBe(ping.id);
    expect(new Webhook(secret).verify(first!.body, first!.headers)).toMatchObject({
      type: 'webhook.ping',
      endpointId: endpoint.id,
    });
    expect(await settled(endpoint.id, ping.id)).toStrictEqual({
      ...ping,
      status: 'delivered',
      attempts: 1,
      lastResponseCode: 200,
      nextAttemptAt: null,
    });

    // Pages: newest first, `next` from the Link header, and the iterator over them all.
    // Newest first is the order they were enqueued in, even within one millisecond.
    const second = await rest.endpoints.ping(endpoint.id);
    const third = await rest.endpoints.ping(endpoint.id);
    const page = await rest.endpoints.deliveries(endpoint.id, { limit: 2 });
    expect(page.deliveries.map((delivery) => delivery.id)).toStrictEqual([third.id, second.id]);
    expect(page.next).toBe(second.id);
    const last = await rest.endpoints.deliveries(endpoint.id, { limit: 2, before: page.next });
    expect(last.deliveries.map((delivery) => delivery.id)).toStrictEqual([ping.id]);
    expect(last.next).toBeUndefined();
    const all: string[] = [];
    for await (const delivery of rest.endpoints.allDeliveries(endpoint.id, { limit: 1 }))
      all.push(delivery.id);
    expect(all).toStrictEqual([third.id, second.id, ping.id]);
    await receiver.until(3);

    // Redelivery: the same webhook-id again.
    const redelivered = await rest.endpoints.redeliver(endpoint.id, ping.id);
    expect(redelivered).toMatchObject({ id: ping.id, status: 'pending' });
    await receiver.until(4);
    const again = receiver.received.filter((request) => request.headers['webhook-id'] === ping.id);
    expect(again).toHaveLength(2);
    expect(new Webhook(secret).verify(again[1]!.body, again[1]!.headers)).toMatchObject({
      endpointId: endpoint.id,
    });

    // Rotation: both secrets sign until previousSecretExpiresAt.
    const rotated = await rest.endpoints.rotateSecret(endpoint.id);
    expect(rotated).toStrictEqual({
      id: endpoint.id,
      secret: expect.stringMatching(/^whsec_/),
      previousSecretExpiresAt: expect.any(String),
    });
    expect(rotated.secret).not.toBe(secret);
    await rest.endpoints.ping(endpoint.id);
    const [signed] = (await receiver.until(5)).slice(4);
    expect(new Webhook(rotated.secret).verify(signed!.body, signed!.headers)).toMatchObject({
      endpointId: endpoint.id,
    });
    expect(new Webhook(secret).verify(signed!.body, signed!.headers)).toMatchObject({
      endpointId: endpoint.id,
    });

    await rest.endpoints.delete(endpoint.id);
    expect(await rest.endpoints.list()).toStrictEqual([]);
    const gone = await rejectionOf(rest.endpoints.get(endpoint.id));
    expect(gone).toMatchObject({ name: 'PlantStoreError', status: 404, error: 404, method: 'GET' });
    expect(gone.url).toBe(`${api.url}/webhook-endpoints/${endpoint.id}`);
  });

  it("answers 404 for another token's endpoint, on every operation, and lists none of them", async () => {
    const { id } = await rest.endpoints.create({ url: `${receiver.url}/hooks/owned` });
    const { id: deliveryId } = await rest.endpoints.ping(id);
    expect(await other.endpoints.list()).toStrictEqual([]);
    const calls = {
      get: () => other.endpoints.get(id),
      delete: () => other.endpoints.delete(id),
      rotateSecret: () => other.endpoints.rotateSecret(id),
      deliveries: () => other.endpoints.deliveries(id),
      redeliver: () => other.endpoints.redeliver(id, deliveryId),
      ping: () => other.endpoints.ping(id),
    };
    for (const [name, call] of Object.entries(calls)) {
      const error = await rejectionOf(call());
      expect({ name, status: error.status, error: error.error }).toStrictEqual({
        name,
        status: 404,
        error: 404,
      });
    }
    // The same answer as for an id that does not exist: ids cannot be probed.
    const unknown = await rejectionOf(rest.endpoints.get('we_ffffffffffffffffffffffff'));
    const foreign = await rejectionOf(other.endpoints.get(id));
    expect(foreign.serverMessage).toBe(unknown.serverMessage?.replace('we_ffffffffffffffffffffffff', id));
    expect((await rejectionOf(rest.endpoints.redeliver(id, NO_DELIVERY))).status).toBe(404);
    // Untouched for its owner.
    expect((await rest.endpoints.get(id)).id).toBe(id);
    await rest.endpoints.delete(id);
  });

  it('answers 400 with the server message for a URL the server refuses', async () => {
    const error = await rejectionOf(rest.endpoints.create({ url: 'not a url' }));
    expect(error).toMatchObject({
      status: 400,
      error: 400,
      method: 'POST',
      url: `${api.url}/webhook-endpoints`,
    });
    expect(error.serverMessage).toEqual(expect.any(String));
  });
});

/** The calls the retry tests make, through either client. */
type Retried = {
  create(url: string): Promise<unknown>;
  get(id: string): Promise<{ id: string }>;
  delete(id: string): Promise<unknown>;
};

const clients: { name: string; connect(options: Parameters<typeof createRestClient>[0]): Retried }[] = [
  {
    name: 'REST client',
    connect(options) {
      const { endpoints } = createRestClient(options);
      return { create: (url) => endpoints.create({ url }), get: endpoints.get, delete: endpoints.delete };
    },
  },
  {
    name: 'tRPC client',
    connect(options) {
      const { webhookEndpoints } = createTrpcClient(options);
      return {
        create: (url) => webhookEndpoints.create.mutate({ url }),
        get: (id) => webhookEndpoints.get.query({ id }),
        delete: (id) => webhookEndpoints.delete.mutate({ id }),
      };
    },
  },
];

describe.each(clients)('the $name over a connection cut after the request is sent', (kind) => {
  let proxy: TcpProxy;
  /** The HTTP status of each attempt (0: no answer). */
  let statuses: number[];
  let cut: Retried;

  const connect = async () => {
    proxy = await startProxy({ host: '127.0.0.1', port: Number(new URL(api.url).port) });
    statuses = [];
    cut = kind.connect({
      baseUrl: `http://127.0.0.1:${proxy.port}`,
      token: TOKEN,
      fetch: async (input, init) => {
        try {
          const response = await fetch(input, init);
          statuses.push(response.status);
          return response;
        } catch (error) {
          statuses.push(0);
          throw error;
        }
      },
    });
    proxy.setMode('cut-answer');
  };
  afterEach(async () => {
    await proxy?.close();
  });

  it('retries a delete, and resolves when the retry finds it already deleted', async () => {
    const { id } = await rest.endpoints.create({ url: `${receiver.url}/hooks/cut` });
    await connect();
    await cut.delete(id);
    expect(statuses).toStrictEqual([0, 404]);
    expect((await rejectionOf(rest.endpoints.get(id))).status).toBe(404);
  });

  it('retries a read', async () => {
    const { id } = await rest.endpoints.create({ url: `${receiver.url}/hooks/read` });
    await connect();
    expect((await cut.get(id)).id).toBe(id);
    expect(statuses).toStrictEqual([0, 200]);
    await rest.endpoints.delete(id);
  });

  it('never retries a create: a repeat would register a second endpoint', async () => {
    const before = await rest.endpoints.list();
    await connect();
    const url = `${receiver.url}/hooks/once-${kind.name === 'REST client' ? 'rest' : 'trpc'}`;
    expect((await rejectionOf(cut.create(url))).status).toBe(0);
    expect(statuses).toStrictEqual([0]);
    // The server did register it, once: its owner finds it in the list.
    const added = (await rest.endpoints.list()).filter(
      (endpoint) => !before.some((known) => known.id === endpoint.id),
    );
    expect(added.map((endpoint) => endpoint.url)).toStrictEqual([url]);
    await rest.endpoints.delete(added[0]!.id);
  });

  it('a delete of an unknown id still fails with 404 when the first attempt was refused', async () => {
    // The first attempt goes to a port nothing listens on (refused: nothing was sent), the retry
    // to the api.
    const refusedPort = await closedPort();
    statuses = [];
    let attempts = 0;
    const client = kind.connect({
      baseUrl: api.url,
      token: TOKEN,
      fetch: async (input, init) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        if (attempts++ === 0) url.port = String(refusedPort);
        try {
          const response = await fetch(url, init);
          statuses.push(response.status);
          return response;
        } catch (error) {
          statuses.push(0);
          throw error;
        }
      },
    });
    const error = await rejectionOf(client.delete('we_eeeeeeeeeeeeeeeeeeeeeeee'));
    expect(error.status).toBe(404);
    expect(statuses).toStrictEqual([0, 404]);
  });

  it('a delete of an unknown id still fails with 404 when the first attempt was answered', async () => {
    await connect();
    proxy.setMode('up');
    const error = await rejectionOf(cut.delete('we_eeeeeeeeeeeeeeeeeeeeeeee'));
    expect(error.status).toBe(404);
    expect(statuses).toStrictEqual([404]);
  });
});

describe('tRPC client: webhookEndpoints', () => {
  it('runs every procedure with the types of the server router', async () => {
    const trpc = createTrpcClient({ baseUrl: api.url, token: TOKEN });
    const url = `${receiver.url}/hooks/trpc`;
    const created = await trpc.webhookEndpoints.create.mutate({ url, description: 'tRPC test' });
    expect(created).toStrictEqual({
      id: expect.stringMatching(ENDPOINT_ID),
      url,
      description: 'tRPC test',
      secret: expect.stringMatching(/^whsec_/),
      createdAt: expect.any(String),
      events: ['plant.created'],
      disabled: null,
    });
    const { secret, ...endpoint } = created;
    expect(await trpc.webhookEndpoints.get.query({ id: endpoint.id })).toStrictEqual(endpoint);
    expect(await trpc.webhookEndpoints.list.query()).toContainEqual(endpoint);

    const ping = await trpc.webhookEndpoints.ping.mutate({ id: endpoint.id });
    expect(ping).toMatchObject({
      id: expect.stringMatching(DELIVERY_ID),
      event: 'webhook.ping',
      status: 'pending',
    });
    const received = await receiver.until(receiver.received.length + 1);
    const request = received.at(-1)!;
    expect(request.headers['webhook-id']).toBe(ping.id);
    expect(new Webhook(secret).verify(request.body, request.headers)).toMatchObject({
      endpointId: endpoint.id,
    });
    expect(await settled(endpoint.id, ping.id)).toMatchObject({ status: 'delivered', lastResponseCode: 200 });
    const second = await trpc.webhookEndpoints.ping.mutate({ id: endpoint.id });
    // tRPC has no Link header: a page carries the `before` of the next one.
    const newest = await trpc.webhookEndpoints.deliveries.query({ id: endpoint.id, limit: 1 });
    expect({ ids: newest.deliveries.map((delivery) => delivery.id), next: newest.next }).toStrictEqual({
      ids: [second.id],
      next: second.id,
    });
    expect(
      await trpc.webhookEndpoints.deliveries.query({ id: endpoint.id, limit: 1, before: second.id }),
    ).toStrictEqual({
      deliveries: [{ ...ping, status: 'delivered', attempts: 1, lastResponseCode: 200, nextAttemptAt: null }],
      next: null,
    });

    expect(
      await trpc.webhookEndpoints.redeliver.mutate({ id: endpoint.id, deliveryId: ping.id }),
    ).toMatchObject({
      id: ping.id,
      status: 'pending',
    });
    const rotated = await trpc.webhookEndpoints.rotateSecret.mutate({ id: endpoint.id });
    expect(rotated).toMatchObject({ id: endpoint.id, secret: expect.stringMatching(/^whsec_/) });
    await trpc.webhookEndpoints.delete.mutate({ id: endpoint.id });
    expect((await trpc.webhookEndpoints.list.query()).map((e) => e.id)).not.toContain(endpoint.id);

    const otherTrpc = createTrpcClient({ baseUrl: api.url, token: OTHER });
    const { id } = await rest.endpoints.create({ url });
    const error = await rejectionOf(otherTrpc.webhookEndpoints.get.query({ id }));
    expect(error).toMatchObject({ name: 'PlantStoreError', status: 404, error: 404 });
    expect(error.url).toBe(`${api.url}/trpc/webhookEndpoints.get`);
    expect((await rejectionOf(otherTrpc.webhookEndpoints.ping.mutate({ id }))).status).toBe(404);
    await rest.endpoints.delete(id);
  });
});
