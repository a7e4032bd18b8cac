import {
  type CreatedWebhookEndpoint,
  CreatedWebhookEndpointSchema,
  type ListDeliveriesQuery,
  type NewWebhookEndpoint,
  type RotatedWebhookSecret,
  RotatedWebhookSecretSchema,
  type WebhookDelivery,
  WebhookDeliveryIdSchema,
  WebhookDeliverySchema,
  type WebhookEndpoint,
  type WebhookEndpointPatch,
  WebhookEndpointSchema,
} from '@plant-store/schema';
import { z } from 'zod';
import {
  type Answer,
  type Call,
  type CallOptions,
  MERGE_PATCH,
  unusableAnswer,
  withSmallIntegers,
} from './rest-send.ts';

/** Options of one webhook endpoint call. */
export type EndpointCallOptions = Pick<CallOptions, 'signal'>;

/** Which page of {@link WebhookEndpointsClient.deliveries} to read. */
export type DeliveriesQuery = Omit<ListDeliveriesQuery, 'id'>;

/** One page of {@link WebhookEndpointsClient.deliveries}. */
export type DeliveryPage = {
  /** The deliveries of this page, newest first. */
  deliveries: WebhookDelivery[];
  /**
   * The `before` of the next (older) page (the server's `Link: <…>; rel="next"`), or `undefined`
   * when this page is the last one. A delivery id, on a page that lists deliveries (else the
   * answer is a `PlantStoreError`).
   */
  next: string | undefined;
};

/**
 * The bearer token's own webhook endpoints (`/webhook-endpoints`; the token needs the `webhooks`
 * scope). Another token's endpoint is a 404 `PlantStoreError`, like an unknown id. Reads, updates,
 * deletes and redeliveries are retried as `RetryOptions` says (repeating them changes nothing more; a
 * retried delete whose lost first attempt did delete resolves); creates, rotations and pings are
 * sent once, since a repeat would register a second endpoint, replace the new secret, or ping twice.
 */
export type WebhookEndpointsClient = {
  /**
   * `POST /webhook-endpoints`: registers `url` and resolves to the endpoint with its signing secret
   * (`whsec_…`), which no other answer shows: keep it.
   */
  create(endpoint: NewWebhookEndpoint, options?: EndpointCallOptions): Promise<CreatedWebhookEndpoint>;
  /** `GET /webhook-endpoints`: every endpoint of the token, oldest first (never a secret). */
  list(options?: EndpointCallOptions): Promise<WebhookEndpoint[]>;
  /** `GET /webhook-endpoints/{id}`. */
  get(id: string, options?: EndpointCallOptions): Promise<WebhookEndpoint>;
  /**
   * `PATCH /webhook-endpoints/{id}` (a JSON Merge Patch): changes which `events` it receives or its
   * `description` (`null` removes it), the rest as it was; resolves to the endpoint as it is now.
   */
  update(id: string, patch: WebhookEndpointPatch, options?: EndpointCallOptions): Promise<WebhookEndpoint>;
  /** `DELETE /webhook-endpoints/{id}`: removes it and its deliveries; nothing more is sent to it. */
  delete(id: string, options?: EndpointCallOptions): Promise<void>;
  /**
   * `POST /webhook-endpoints/{id}/rotate-secret`: a new secret, which signs at once; the previous
   * one keeps signing alongside it until `previousSecretExpiresAt`.
   */
  rotateSecret(id: string, options?: EndpointCallOptions): Promise<RotatedWebhookSecret>;
  /**
   * `GET /webhook-endpoints/{id}/deliveries`: one page of at most `limit` deliveries (server
   * default 20, at most 100), newest first, enqueued before the delivery `before`. Pass the page's
   * `next` as `before` to read the following (older) page.
   */
  deliveries(id: string, query?: DeliveriesQuery, options?: EndpointCallOptions): Promise<DeliveryPage>;
  /**
   * Every delivery of the endpoint, newest first, reading pages of `limit` as the loop goes. A
   * server whose next page is one already read fails it with a `PlantStoreError`, not a loop.
   */
  allDeliveries(
    id: string,
    query?: Pick<DeliveriesQuery, 'limit'>,
    options?: EndpointCallOptions,
  ): AsyncIterable<WebhookDelivery>;
  /**
   * `POST /webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver`: sends the delivery again
   * (same `webhook-id`, a fresh set of attempts) and resolves to it as it is now: pending, due now.
   */
  redeliver(id: string, deliveryId: string, options?: EndpointCallOptions): Promise<WebhookDelivery>;
  /** `POST /webhook-endpoints/{id}/ping`: enqueues a `webhook.ping` delivery and resolves to it. */
  ping(id: string, options?: EndpointCallOptions): Promise<WebhookDelivery>;
};

/** Sends a call, with the retries its `repeatable` allows. */
type Send = <T>(request: Call<T>, call?: CallOptions) => Promise<Answer<T>>;

const EndpointListSchema = z.array(WebhookEndpointSchema);
// The codec reads integers as bigints; a delivery's (attempts, status codes) are small.
const DeliveryAnswer = withSmallIntegers(WebhookDeliverySchema);
const DeliveryListAnswer = withSmallIntegers(z.array(WebhookDeliverySchema));

/** The webhook endpoint methods of the REST client, over its `send`. */
export function createEndpointsClient(send: Send): WebhookEndpointsClient {
  const path = (id: string) => `/webhook-endpoints/${encodeURIComponent(id)}`;
  const readPage = async (id: string, { limit, before }: DeliveriesQuery = {}, call?: CallOptions) => {
    const query: Record<string, string> = {};
    if (limit !== undefined) query.limit = String(limit);
    if (before !== undefined) query.before = before;
    const answer = await send(
      {
        method: 'GET',
        path: `${path(id)}/deliveries`,
        query,
        answer: DeliveryListAnswer,
        repeatable: 'safe',
        next: 'before',
      },
      call,
    );
    return { answer, page: { deliveries: answer.data, next: nextBefore(answer) } };
  };
  return {
    async create(endpoint, call) {
      return (
        await send(
          {
            method: 'POST',
            path: '/webhook-endpoints',
            body: endpoint,
            answer: CreatedWebhookEndpointSchema,
          },
          call,
        )
      ).data;
    },
    async list(call) {
      const request = { method: 'GET', path: '/webhook-endpoints', answer: EndpointListSchema } as const;
      return (await send({ ...request, repeatable: 'safe' }, call)).data;
    },
    async get(id, call) {
      return (
        await send({ method: 'GET', path: path(id), answer: WebhookEndpointSchema, repeatable: 'safe' }, call)
      ).data;
    },
    async update(id, patch, call) {
      const request = {
        method: 'PATCH',
        path: path(id),
        body: patch,
        contentType: MERGE_PATCH,
        answer: WebhookEndpointSchema,
      } as const;
      return (await send({ ...request, repeatable: 'safe' }, call)).data;
    },
    async delete(id, call) {
      await send({ method: 'DELETE', path: path(id), answer: undefined, repeatable: 'delete' }, call);
    },
    async rotateSecret(id, call) {
      return (
        await send(
          { method: 'POST', path: `${path(id)}/rotate-secret`, answer: RotatedWebhookSecretSchema },
          call,
        )
      ).data;
    },
    deliveries: async (id, query, call) => (await readPage(id, query, call)).page,
    async *allDeliveries(id, { limit } = {}, call) {
      // Delivery ids are random, so a cursor cannot be checked to advance: the ones read are kept.
      const read = new Set<string>();
      let before: string | undefined;
      do {
        const { answer, page } = await readPage(id, { limit, before }, call);
        yield* page.deliveries;
        before = page.next;
        if (before !== undefined && read.has(before)) {
          throw unusableAnswer(answer, 'GET', `its next page (before=${before}) was read already`);
        }
        if (before !== undefined) read.add(before);
      } while (before !== undefined);
    },
    async redeliver(id, deliveryId, call) {
      const redeliver = `${path(id)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`;
      return (
        await send({ method: 'POST', path: redeliver, answer: DeliveryAnswer, repeatable: 'safe' }, call)
      ).data;
    },
    async ping(id, call) {
      return (await send({ method: 'POST', path: `${path(id)}/ping`, answer: DeliveryAnswer }, call)).data;
    },
  };
}

/** The `before` of the page following `answer`: a delivery id, which a page of deliveries links to. */
function nextBefore(answer: Answer<WebhookDelivery[]>): string | undefined {
  const { data, next } = answer;
  if (next === undefined) return undefined;
  if (!WebhookDeliveryIdSchema.safeParse(next).success) {
    throw unusableAnswer(answer, 'GET', `its next page's before (${next}) is not a delivery id`);
  }
  if (data.length === 0)
    throw unusableAnswer(answer, 'GET', 'it lists no deliveries but links to a next page');
  return next;
}
