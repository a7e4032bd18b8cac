/**
 * A receiver of the four webhooks, typed from the document's `webhooks` (one per `webhook-event`):
 * it registers an endpoint for every event type, makes a plant change three times and pings, then
 * prints each delivery as its type says it is. Signatures are verified first (Standard Webhooks).
 * Run it against an api that may deliver to loopback (WEBHOOK_ALLOW_PRIVATE_URLS=1).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'lossless-json';
import createClient from 'openapi-fetch';
import { Webhook } from 'standardwebhooks';
import type { paths, webhooks } from './generated/plant-store.ts';

/** What a webhook of the document delivers: its `webhook-event` and its body, each as declared. */
type Delivery = {
  [Name in keyof webhooks]: {
    event: webhooks[Name]['post']['parameters']['header']['webhook-event'];
    body: webhooks[Name]['post']['requestBody']['content']['application/json'];
  };
}[keyof webhooks];

/** One line per delivery; the compiler checks each case against its body's type. */
function describe(delivery: Delivery): string {
  switch (delivery.event) {
    case 'plant.created':
      return `plant.created ${delivery.body.id} ${delivery.body.name}`;
    case 'plant.updated':
      return `plant.updated ${delivery.body.id} ${delivery.body.name} changed ${delivery.body.changed.join(',')}`;
    case 'plant.deleted':
      return `plant.deleted ${delivery.body.id}`;
    case 'webhook.ping':
      return `webhook.ping ${delivery.body.endpointId === endpointId ? 'from our endpoint' : delivery.body.endpointId}`;
  }
}

const client = createClient<paths>({
  baseUrl: process.env.PLANTS_URL ?? 'http://127.0.0.1:3000',
  headers: { authorization: `Bearer ${process.env.PLANTS_TOKEN}` },
});

let endpointId = '';
let verifier: Webhook | undefined;
const received: string[] = [];
const server = createServer((req, res) => {
  let raw = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => {
    raw += chunk;
  });
  req.on('end', () => {
    verifier!.verify(raw, req.headers as Record<string, string>);
    // Ids are int64: parsed exactly, then read as the generated types say (numbers, here small).
    const body = parse(raw, null, (text) => Number(text));
    received.push(describe({ event: req.headers['webhook-event'], body } as Delivery));
    res.end();
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

const registered = await client.POST('/webhook-endpoints', {
  body: { url, events: ['plant.created', 'plant.updated', 'plant.deleted'] },
});
if (registered.error) throw new Error(`register: ${registered.error.message}`);
endpointId = registered.data.id;
verifier = new Webhook(registered.data.secret);

await client.POST('/plants', { body: { id: 3001, name: 'Pilea' } });
await client.PATCH('/plants/{id}', { params: { path: { id: 3001 } }, body: { name: 'Pilea peperomioides' } });
await client.DELETE('/plants/{id}', { params: { path: { id: 3001 } } });
await client.POST('/webhook-endpoints/{id}/ping', { params: { path: { id: endpointId } } });

const deadline = Date.now() + 20_000;
while (received.length < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
// Delivery is not ordered: print in a stable order.
for (const line of received.sort()) console.log(line);
server.close();
