import { z } from 'zod';
import { RequestError } from '../errors.ts';

/**
 * Conditional requests (RFC 9110 §13) on plants: a plant's version is its strong ETag, `"<version>"`.
 * REST sends it in `If-Match` (PATCH, DELETE) and `If-None-Match` (GET); tRPC callers send the
 * version itself as `expectedVersion`.
 */

/** The input member tRPC callers name the version they expect in; REST's is the `If-Match` header. */
export const EXPECTED_VERSION = 'expectedVersion';

/** The strong ETag of a version. */
export const etagOf = (version: bigint): string => `"${version}"`;

/** Which versions a change may apply to: any (the plant must only exist), or only these. */
export type Expected = 'any' | readonly bigint[];

const ENTITY_TAG = /(W\/)?"([^"]*)"/g;
const VERSION = /^(0|[1-9][0-9]{0,18})$/;

/** The entity tags of an `If-Match` or `If-None-Match` list, `'*'` for any. */
function entityTags(header: string): '*' | { weak: boolean; opaque: string }[] {
  if (header.trim() === '*') return '*';
  return [...header.matchAll(ENTITY_TAG)].map((match) => ({
    weak: match[1] !== undefined,
    opaque: match[2]!,
  }));
}

/**
 * The versions an `If-Match` header names: strong comparison, so a weak tag (`W/"42"`) never
 * matches, nor does one that is no version of ours (then the list is empty and any plant fails it).
 */
export function ifMatchVersions(header: string): Expected {
  const tags = entityTags(header);
  if (tags === '*') return 'any';
  return tags.filter((tag) => !tag.weak && VERSION.test(tag.opaque)).map((tag) => BigInt(tag.opaque));
}

/** Whether `If-None-Match` names `etag` (weak comparison, as RFC 9110 §13.1.2 asks) or is `*`. */
export function noneMatchFails(header: string, etag: string): boolean {
  if (header === etag) return true;
  const tags = entityTags(header);
  return tags === '*' || tags.some((tag) => `"${tag.opaque}"` === etag);
}

/**
 * What a change may apply to: the REST request's `If-Match`, or tRPC's `expectedVersion`;
 * `undefined` when the caller set no condition.
 */
export function expectedOf(
  ifMatch: string | undefined,
  expectedVersion: bigint | undefined,
): Expected | undefined {
  if (ifMatch !== undefined) return ifMatchVersions(ifMatch);
  return expectedVersion === undefined ? undefined : [expectedVersion];
}

/** 412: the plant is not at a version the caller expected; nothing changed. */
export function staleVersion(id: bigint, version: bigint): RequestError {
  return new RequestError(
    'precondition_failed',
    `Plant ${id} is at version ${version}, not the one this request expected; read it again and retry. Nothing was changed.`,
  );
}

/** The `If-Match` request header as the OpenAPI document declares it. */
export const IfMatchHeaders = z.object({
  'If-Match': z
    .string()
    .optional()
    .meta({
      description:
        'Change the plant only if its ETag is one of these (a comma-separated list of strong ETags, such as ' +
        '`"42"`), or, with `*`, only if it exists; otherwise 412 and nothing changes. Weak tags never match',
      example: '"42"',
    }),
});
