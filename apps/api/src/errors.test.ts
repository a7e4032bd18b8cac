import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { describeTrpcError, toTrpcError } from './trpc/procedures.ts';
import { RequestError, methodNotAllowed, toHttpError } from './errors.ts';

describe('RequestError on the wire', () => {
  it('takes its status and headers from the reason, never from the message', () => {
    // The same words under both reasons: only the reason picks the challenge.
    const words = 'Missing bearer token.';
    expect(toHttpError(new RequestError('missing_token', words))).toEqual({
      status: 401,
      message: words,
      headers: { 'WWW-Authenticate': 'Bearer' },
    });
    expect(toHttpError(new RequestError('invalid_token', words))).toEqual({
      status: 401,
      message: words,
      headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
    });
    expect(toHttpError(new RequestError('busy', 'Too many lists.'))).toEqual({
      status: 503,
      message: 'Too many lists.',
      headers: { 'Retry-After': '1' },
    });
    expect(toHttpError(methodNotAllowed('PUT', ['GET', 'HEAD']))).toEqual({
      status: 405,
      message: 'PUT is not allowed on this path; allowed: GET, HEAD.',
      headers: { Allow: 'GET, HEAD' },
    });
  });

  it('shows the message of a 503 but never its cause, and nothing of an error that is not a RequestError', () => {
    const outage = new RequestError('unavailable', 'The store is unavailable; retry the request later.', {
      cause: new Error('connect ECONNREFUSED 10.0.0.7:5432'),
    });
    expect(toHttpError(outage)).toEqual({
      status: 503,
      message: 'The store is unavailable; retry the request later.',
      headers: {},
    });
    expect(toHttpError(new TypeError("Cannot read properties of undefined (reading 'id')"))).toEqual({
      status: 500,
      message: 'Internal server error.',
      headers: {},
    });
  });

  it('says the same over tRPC as over REST, with the tRPC code of its status', () => {
    for (const error of [
      new RequestError('conflict', 'A plant with id 1 already exists.'),
      new RequestError('invalid_token', 'The bearer token is not valid.'),
      new RequestError('busy', 'Too many lists are being read right now; retry in a second.'),
      new RequestError('rate_limited', 'Too many requests.', { headers: { 'Retry-After': '7' } }),
    ]) {
      const trpc = toTrpcError(error);
      expect(trpc).toBeInstanceOf(TRPCError);
      expect(describeTrpcError(trpc)).toEqual(toHttpError(error));
    }
    expect(toTrpcError(new RequestError('conflict', 'x')).code).toBe('CONFLICT');
    expect(toTrpcError(new RequestError('too_large', 'x')).code).toBe('PAYLOAD_TOO_LARGE');
    expect(toTrpcError(new RequestError('unavailable', 'x')).code).toBe('SERVICE_UNAVAILABLE');
  });

  it("describes tRPC's own errors by their message, and an unknown failure generically", () => {
    const unknown = new TRPCError({ code: 'NOT_FOUND', message: 'No "mutation"-procedure on path "x"' });
    expect(describeTrpcError(unknown)).toEqual({
      status: 404,
      message: 'No "mutation"-procedure on path "x"',
      headers: {},
    });
    const bug = new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: new Error('SELECT * FROM plants') });
    expect(describeTrpcError(bug)).toEqual({ status: 500, message: 'Internal server error.', headers: {} });
  });
});
