import { ApiErrorSchema } from '@plant-store/schema';
import type { AnyOperation } from '../operation.ts';
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
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: describe(route.operation) };
  }
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Plant Store',
      version: '1.0.0',
      description: 'A plant store over HTTP. Every operation needs a bearer token.',
      license: { name: 'MIT', identifier: 'MIT' },
      contact: { name: 'Plant Store maintainers' },
    },
    servers: [{ url: serverUrl, description: 'This server' }],
    security: [{ [SECURITY_SCHEME]: [] }],
    tags: [{ name: 'plants', description: 'Plant records' }],
    paths,
    components: {
      securitySchemes: {
        [SECURITY_SCHEME]: { type: 'http', scheme: 'bearer', description: 'A token from API_TOKENS' },
      },
    },
  });
}

function describe({ openapi, input, output }: AnyOperation): ZodOpenApiOperationObject {
  const errors = Object.entries(openapi.errorResponses ?? {}).map(([status, description]) => [
    status,
    { description, content: { 'application/json': { schema: ApiErrorSchema } } },
  ]);
  return {
    operationId: openapi.operationId,
    summary: openapi.summary,
    description: openapi.description,
    tags: openapi.tags,
    requestBody: { required: true, content: { 'application/json': { schema: input } } },
    responses: {
      200: {
        description: openapi.successDescription ?? 'Success',
        ...(output && { content: { 'application/json': { schema: output } } }),
      },
      ...Object.fromEntries(errors),
    },
  };
}
