import {
  ApiErrorSchema,
  NewPlantSchema,
  PlantDeletedWebhookSchema,
  PlantUpdatedWebhookSchema,
  WebhookPingSchema,
} from '@plant-store/schema';
import { getPathParameters } from 'trpc-to-openapi';
import { z } from 'zod';
import {
  createDocument,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponseObject,
} from 'zod-openapi';
import { EXPECTED_VERSION } from '../operations/conditions.ts';
import { type AnyOperation, takesBody } from '../operations/operation.ts';
import {
  EVERY_ANSWER_HEADERS,
  HEADERS,
  METHOD_NOT_ALLOWED,
  NOT_MODIFIED,
  PROBE_HEADERS,
  PROTECTED_ANSWERS,
  RequestIdParam,
} from '../operations/answers.ts';
import type { RestRoute } from './rest.ts';

const SECURITY_SCHEME = 'bearerAuth';

/**
 * The OpenAPI 3.1.0 document, generated from the same route table and zod schemas that serve the
 * requests, so it cannot describe an operation that is not served.
 */
export function openApiDocument(routes: RestRoute[], serverUrl: string): object {
  const paths: ZodOpenApiPathsObject = {};
  for (const route of routes) {
    paths[route.path] = {
      ...paths[route.path],
      [route.method.toLowerCase()]: describe(route.operation, route.path),
    };
  }
  Object.assign(paths, PROBES);
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Plant Store',
      version: '1.0.0',
      description:
        'A plant store over HTTP. Every plant operation needs a bearer token with the scope it names ' +
        '(`read` or `write`), every webhook endpoint operation one with the `webhooks` scope; the probes ' +
        '`/healthz` and `/readyz` need none. Every operation that checks a token is rate limited (429 with ' +
        '`Retry-After`; `RateLimit` and `RateLimit-Policy` on its answers), and every answer carries ' +
        '`X-Request-Id`. Every GET is also served as HEAD (RFC 9110 §9.3.2): the same status and headers, no ' +
        'body. A path answers a method it is not served with by 405 with `Allow` (`components.responses.MethodNotAllowed`).',
      license: { name: 'MIT', identifier: 'MIT' },
      contact: { name: 'Plant Store maintainers' },
    },
    servers: [{ url: serverUrl, description: 'This server' }],
    security: [{ [SECURITY_SCHEME]: [] }],
    tags: [
      { name: 'plants', description: 'Plant records' },
      {
        name: 'webhook-endpoints',
        description:
          'Endpoints a token registers to receive webhooks, with its own signing secret (needs the `webhooks` scope)',
      },
      { name: 'operations', description: 'Probes for load balancers; no token needed' },
      {
        name: 'webhooks',
        description:
          'Requests this service sends to the subscribers in WEBHOOK_URLS and to registered webhook endpoints',
      },
    ],
    paths,
    webhooks: WEBHOOKS,
    components: {
      responses: { [METHOD_NOT_ALLOWED.id]: shared(METHOD_NOT_ALLOWED) },
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A bearer token: one the operator configured (`API_TOKENS`, or the token the service generated on ' +
            'first start), or one issued with `main.js token create`, which carries scopes (`read`, `write`, `webhooks`, `metrics`).',
        },
      },
    },
  });
}

const HealthSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });

const ProviderSchema = z
  .object({
    issuer: z.string().meta({ description: 'The OpenID provider (its discovery document is under it)' }),
    clientId: z.string().meta({
      description: 'The public client to sign in with (authorization code + PKCE, or the device flow)',
    }),
    audience: z.string().meta({ description: 'The audience (resource) access tokens must be issued for' }),
    scopes: z.array(z.string()).meta({ description: 'The scopes to ask for' }),
  })
  .meta({ id: 'SignInProvider' });
const ProviderAnswerSchema = z.object({ provider: ProviderSchema.nullable() });

/** The unauthenticated probes and sign-in discovery served by app.ts. */
const PROBES: ZodOpenApiPathsObject = {
  '/auth/provider': {
    get: {
      operationId: 'authProvider',
      summary: 'Where to sign in',
      description:
        'The identity provider the console and `plants login` sign in with (docs/identity.md); `null` ' +
        'when none is configured (sign in with a bearer token).',
      tags: ['operations'],
      security: [],
      requestParams: { header: z.object({ 'X-Request-Id': RequestIdParam }) },
      responses: {
        200: {
          description: 'The provider, or null',
          headers: PROBE_HEADERS,
          content: { 'application/json': { schema: ProviderAnswerSchema } },
        },
      },
    },
  },
  '/healthz': {
    get: {
      operationId: 'healthz',
      summary: 'Liveness',
      description: 'Answers 200 while the process is up; never touches the store.',
      tags: ['operations'],
      security: [],
      requestParams: { header: z.object({ 'X-Request-Id': RequestIdParam }) },
      responses: {
        200: {
          description: 'The process is up',
          headers: PROBE_HEADERS,
          content: { 'application/json': { schema: HealthSchema } },
        },
      },
    },
  },
  '/readyz': {
    get: {
      operationId: 'readyz',
      summary: 'Readiness',
      description:
        'Answers 200 when the store answers a query, else 503 (within DATABASE_TIMEOUT_MS). Callers share ' +
        'one query a second: an answer is at most 1 s old.',
      tags: ['operations'],
      security: [],
      requestParams: { header: z.object({ 'X-Request-Id': RequestIdParam }) },
      responses: {
        200: {
          description: 'The store answers',
          headers: PROBE_HEADERS,
          content: { 'application/json': { schema: HealthSchema } },
        },
        503: {
          description: 'The store is unavailable',
          headers: PROBE_HEADERS,
          content: { 'application/json': { schema: ApiErrorSchema } },
        },
      },
    },
  },
};

/** The Standard Webhooks headers every delivery carries, with its type in `webhook-event`. */
function deliveryHeaders(event: string, eventDescription: string) {
  return z.object({
    'webhook-id': z.string().meta({
      description: 'Identifies this delivery; the same on every attempt',
      example: 'msg_4f9a2b7c1d3e4f5a6b7c8d9e0f1a2b3c',
    }),
    'webhook-timestamp': z
      .string()
      .regex(/^[0-9]+$/)
      .meta({
        description: 'When this attempt was signed, in seconds since the Unix epoch',
        example: '1767225600',
      }),
    'webhook-signature': z.string().meta({
      description:
        '`v1,` then the base64 HMAC-SHA256, keyed with the base64-decoded part of WEBHOOK_SECRET after `whsec_`, of `<webhook-id>.<webhook-timestamp>.<body>`. ' +
        'To a registered endpoint: keyed with its secret, and during a rotation’s overlap a second, space-separated `v1,` signature with the previous secret',
      example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
    }),
    'webhook-event': z.literal(event).meta({ description: eventDescription, example: event }),
  });
}

const DELIVERY =
  'signed as the Standard Webhooks specification describes. Any 2xx answer acknowledges it; anything else (or no ' +
  'answer in time) is retried with exponential backoff and jitter, with the same `webhook-id`: delivery is at least ' +
  'once, so de-duplicate by `webhook-id`.';

const ACKNOWLEDGED = {
  200: { description: 'Return a 200 status to indicate that the data was received successfully' },
};

/** One webhook per event type, delivered by webhooks/worker.ts: its headers and its body. */
function webhook(
  operationId: string,
  summary: string,
  description: string,
  event: string,
  body: { description: string; schema: z.ZodType },
) {
  return {
    post: {
      operationId,
      summary,
      description: `${description} ${DELIVERY}`,
      tags: ['webhooks'],
      security: [],
      requestParams: {
        header: deliveryHeaders(event, `The event type: \`${event}\` on every delivery of this webhook`),
      },
      requestBody: {
        description: body.description,
        required: true,
        content: { 'application/json': { schema: body.schema } },
      },
      responses: ACKNOWLEDGED,
    },
  };
}

/**
 * The webhooks, one per event type (`webhook-event`). The first keeps the name and wording of the
 * published "OpenAPI Plant Store" document (and of the released 1.0.0 contract).
 */
const WEBHOOKS: ZodOpenApiPathsObject = {
  '/plant/webhook': {
    post: {
      ...webhook(
        'newPlantWebhook',
        'Information about a new plant added to the store',
        'POSTed to every URL in WEBHOOK_URLS, and to every endpoint registered with `POST /webhook-endpoints` ' +
          'that chose `plant.created` (the default; signed with its own secret), once a plant is created, ' +
          'with `webhook-event: plant.created`. A registered endpoint gets the other types it chose as the ' +
          '`plant.updated`, `plant.deleted` and `webhook.ping` webhooks describe;',
        'plant.created',
        { description: 'Plant added to the store', schema: NewPlantSchema },
      ).post,
      requestParams: {
        header: deliveryHeaders(
          'plant.created',
          'The event type, on every delivery. The WEBHOOK_URLS subscribers get only `plant.created`; a ' +
            'registered endpoint gets the types it chose (its `events`), each as its own webhook of this ' +
            'document describes (`plant.updated`, `plant.deleted`, `webhook.ping`)',
        ),
      },
    },
  },
  'plant.updated': webhook(
    'plantUpdatedWebhook',
    'A plant was updated',
    'POSTed to every endpoint registered with `POST /webhook-endpoints` that chose `plant.updated`, once a ' +
      'change to a plant commits (a patch that changes nothing sends none), signed with the endpoint’s secret;',
    'plant.updated',
    {
      description: 'The plant after the change, and the fields that changed',
      schema: PlantUpdatedWebhookSchema,
    },
  ),
  'plant.deleted': webhook(
    'plantDeletedWebhook',
    'A plant was deleted',
    'POSTed to every endpoint registered with `POST /webhook-endpoints` that chose `plant.deleted`, once a ' +
      'plant’s deletion commits, signed with the endpoint’s secret;',
    'plant.deleted',
    { description: 'The id of the plant that was deleted', schema: PlantDeletedWebhookSchema },
  ),
  'webhook.ping': webhook(
    'webhookPingWebhook',
    'A test event',
    'POSTed to one registered endpoint when its owner asks for it (`POST /webhook-endpoints/{id}/ping`), ' +
      'whatever event types it chose, signed with the endpoint’s secret;',
    'webhook.ping',
    { description: 'The test event', schema: WebhookPingSchema },
  ),
};

/** An `Error` answer: the body every refusal has, and the headers of every answer. */
const errorContent = { 'application/json': { schema: ApiErrorSchema } };

type Shared = { id: string; description: string; headers?: Record<string, z.ZodType> };

/** A shared answer as a component of `components.responses` (zod-openapi registers it by its `id`). */
const sharedResponses = new Map<string, ZodOpenApiResponseObject>();
function shared(answer: Shared): ZodOpenApiResponseObject {
  let response = sharedResponses.get(answer.id);
  if (response === undefined) {
    response = {
      id: answer.id,
      description: answer.description,
      headers: EVERY_ANSWER_HEADERS.extend(answer.headers ?? {}),
      ...(answer.id !== NOT_MODIFIED.id && { content: errorContent }),
    };
    sharedResponses.set(answer.id, response);
  }
  return response;
}

function describe(operation: AnyOperation, path: string): ZodOpenApiOperationObject {
  const { openapi, input, output, rest, stream } = operation;
  const status = rest?.status ?? 200;
  // A stream's schema is that of each event's `data`.
  const mediaType = stream ? 'text/event-stream' : 'application/json';
  const success = {
    description: openapi.successDescription ?? 'Success',
    headers: EVERY_ANSWER_HEADERS.extend(openapi.responseHeaders?.shape ?? {}),
    ...(output && status !== 204 && { content: { [mediaType]: { schema: output } } }),
  };
  const responses: Record<string, ZodOpenApiResponseObject> = { [status]: success };
  // rest.ts answers 304 to a GET whose answer has an ETag that `If-None-Match` names.
  if (openapi.method === 'GET' && openapi.responseHeaders?.shape.ETag !== undefined) {
    responses[304] = shared(NOT_MODIFIED);
  }
  const own = (openapi.errorResponses ?? {}) as Record<string, string>;
  const sharedHeaders = PROTECTED_ANSWERS as Record<string, Shared>;
  for (const [code, description] of Object.entries(own)) {
    const headers = {
      ...sharedHeaders[code]?.headers,
      // A keyed request still in flight: 409 with `Retry-After: 1` (idempotency.ts).
      ...(code === '409' && operation.idempotencyKey && { 'Retry-After': HEADERS.retryAfterWhenBusy }),
    };
    responses[code] = { description, headers: EVERY_ANSWER_HEADERS.extend(headers), content: errorContent };
  }
  for (const [code, answer] of Object.entries(PROTECTED_ANSWERS)) {
    responses[code] ??= shared(answer);
  }
  const pathParams = getPathParameters(path);
  const shape = input instanceof z.ZodObject ? (input.shape as Record<string, z.ZodType>) : {};
  const pick = (keys: string[]) =>
    z.object(Object.fromEntries(Object.entries(shape).filter(([key]) => keys.includes(key))));
  const inBody = takesBody(operation);
  const header = {
    header: z.object({ ...openapi.requestHeaders?.shape, 'X-Request-Id': RequestIdParam }),
  };
  // A PATCH: a JSON Merge Patch in the body, the path's parameters beside it.
  const patch = operation.body && {
    requestBody: {
      required: true,
      content: {
        'application/merge-patch+json': { schema: operation.body },
        'application/json': { schema: operation.body },
      },
    },
    requestParams: { path: pick(pathParams), ...header },
  };
  return {
    operationId: openapi.operationId,
    summary: openapi.summary,
    description: openapi.description,
    tags: openapi.tags,
    ...(patch ??
      (inBody
        ? {
            requestBody: { required: true, content: { 'application/json': { schema: input } } },
            requestParams: header,
          }
        : {
            requestParams: {
              path: pick(pathParams),
              query: pick(
                Object.keys(shape).filter((key) => !pathParams.includes(key) && key !== EXPECTED_VERSION),
              ),
              ...header,
            },
          })),
    responses,
  };
}
