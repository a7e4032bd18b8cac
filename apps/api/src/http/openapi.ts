import { ApiErrorSchema, NewPlantSchema } from '@plant-store/schema';
import { getPathParameters } from 'trpc-to-openapi';
import { z } from 'zod';
import { EXPECTED_VERSION } from '../conditions.ts';
import { type AnyOperation, takesBody } from '../operation.ts';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
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
        '`/healthz` and `/readyz` need none.',
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

/** The unauthenticated probes served by app.ts. */
const PROBES: ZodOpenApiPathsObject = {
  '/healthz': {
    get: {
      operationId: 'healthz',
      summary: 'Liveness',
      description: 'Answers 200 while the process is up; never touches the store.',
      tags: ['operations'],
      security: [],
      responses: {
        200: { description: 'The process is up', content: { 'application/json': { schema: HealthSchema } } },
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
      responses: {
        200: { description: 'The store answers', content: { 'application/json': { schema: HealthSchema } } },
        503: {
          description: 'The store is unavailable',
          content: { 'application/json': { schema: ApiErrorSchema } },
        },
      },
    },
  },
};

/**
 * The new-plant webhook, delivered by webhooks/worker.ts. Named and worded as in the published
 * "OpenAPI Plant Store" document; the signature headers are Standard Webhooks'.
 */
const WEBHOOKS: ZodOpenApiPathsObject = {
  '/plant/webhook': {
    post: {
      operationId: 'newPlantWebhook',
      summary: 'Information about a new plant added to the store',
      description:
        'POSTed to every URL in WEBHOOK_URLS, and to every endpoint registered with `POST /webhook-endpoints` ' +
        'that chose `plant.created` (the default; signed with its own secret), once a plant is created, signed as ' +
        'the Standard Webhooks specification describes. Any 2xx answer acknowledges it; anything else (or no answer in time) is ' +
        'retried with exponential backoff and jitter, with the same `webhook-id`: delivery is at least ' +
        'once, so de-duplicate by `webhook-id`.',
      tags: ['webhooks'],
      security: [],
      requestParams: {
        header: z.object({
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
          'webhook-event': z.literal('plant.created').meta({
            description:
              'The event type, on every delivery. The WEBHOOK_URLS subscribers get only `plant.created`; a ' +
              'registered endpoint gets the types it chose (its `events`), `plant.updated` with ' +
              '`{id, name, tag?, version, changed}` and `plant.deleted` with `{id}` as the body',
            example: 'plant.created',
          }),
        }),
      },
      requestBody: {
        description: 'Plant added to the store',
        required: true,
        content: { 'application/json': { schema: NewPlantSchema } },
      },
      responses: {
        200: { description: 'Return a 200 status to indicate that the data was received successfully' },
      },
    },
  },
};

function describe(operation: AnyOperation, path: string): ZodOpenApiOperationObject {
  const { openapi, input, output, rest, stream } = operation;
  const errors = Object.entries(openapi.errorResponses ?? {}).map(([status, description]) => [
    status,
    { description, content: { 'application/json': { schema: ApiErrorSchema } } },
  ]);
  const status = rest?.status ?? 200;
  // A stream's schema is that of each event's `data`.
  const mediaType = stream ? 'text/event-stream' : 'application/json';
  const success = {
    description: openapi.successDescription ?? 'Success',
    ...(output && status !== 204 && { content: { [mediaType]: { schema: output } } }),
    ...(openapi.responseHeaders && { headers: openapi.responseHeaders }),
  };
  const pathParams = getPathParameters(path);
  const shape = input instanceof z.ZodObject ? (input.shape as Record<string, z.ZodType>) : {};
  const pick = (keys: string[]) =>
    z.object(Object.fromEntries(Object.entries(shape).filter(([key]) => keys.includes(key))));
  const inBody = takesBody(operation);
  const header = openapi.requestHeaders && { header: openapi.requestHeaders };
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
            ...(header && { requestParams: header }),
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
    responses: { [status]: success, ...Object.fromEntries(errors) },
  };
}
