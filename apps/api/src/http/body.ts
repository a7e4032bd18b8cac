import type { IncomingMessage } from 'node:http';
import { parseJson } from '@plant-store/schema';
import getRawBody from 'raw-body';
import { RequestError } from '../errors.ts';

/** Largest request body accepted, in bytes; larger ones are answered 413. */
export const BODY_LIMIT_BYTES = 64 * 1024;

/**
 * The request body as text, for both transports: at most `BODY_LIMIT_BYTES` (413 beyond), `''`
 * when there is none.
 */
export async function readBodyText(req: IncomingMessage): Promise<string> {
  try {
    return await getRawBody(req, {
      length: req.headers['content-length'],
      limit: BODY_LIMIT_BYTES,
      encoding: 'utf-8',
    });
  } catch (cause) {
    if ((cause as { type?: string }).type === 'entity.too.large') {
      throw new RequestError('too_large', `The request body is larger than ${BODY_LIMIT_BYTES} bytes.`);
    }
    throw badRequest('The request body could not be read.');
  }
}

const JSON_ONLY = ['application/json'];

/**
 * Reads a REST JSON request body exactly (int64 ids as bigint). One of `mediaTypes` (default
 * `application/json`), with or without parameters, is JSON; any other media type is 415, a missing
 * or empty body 400, malformed JSON 400.
 */
export async function readJsonBody(req: IncomingMessage, mediaTypes = JSON_ONLY): Promise<unknown> {
  const header = req.headers['content-type'];
  const hasBody =
    req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (header === undefined && !hasBody) throw badRequest('The request body is required.');
  const [mediaType = '', ...params] = (header ?? '').split(';').map((part) => part.trim().toLowerCase());
  const charset = params
    .find((param) => param.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/"/g, '');
  if (
    !mediaTypes.includes(mediaType) ||
    (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
  ) {
    const sent = mediaTypes.map((type) => `"Content-Type: ${type}"`).join(' or ');
    throw new RequestError('unsupported_media_type', `The request body must be JSON, sent with ${sent}.`);
  }
  const text = await readBodyText(req);
  if (text.trim() === '') throw badRequest('The request body is required.');
  try {
    return parseJson(text);
  } catch {
    throw badRequest(NOT_JSON);
  }
}

/** What a body that is not JSON is told, over both transports. */
export const NOT_JSON = 'The request body is not valid JSON.';

function badRequest(message: string): RequestError {
  return new RequestError('bad_request', message);
}
