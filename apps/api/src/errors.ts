import { TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';

/** What an error becomes on the wire: an HTTP status, one sentence, and any headers it needs. */
export type HttpError = { status: number; message: string; headers?: Record<string, string> };

type Issue = { path?: readonly PropertyKey[]; message: string };

const GENERIC_5XX: Record<number, string> = {
  503: 'The store is unavailable; retry the request later.',
};

/**
 * The cause of a 503 that says this process is at one of its bounds right now, not failing: its
 * TRPCError's message is shown, with `Retry-After: 1`.
 */
export class BusyError extends Error {
  override name = 'BusyError';
}

export function isBusy(error: unknown): boolean {
  return error instanceof TRPCError && error.cause instanceof BusyError;
}

/**
 * The single mapping from anything thrown while answering a request to what the client sees.
 * 4xx messages are ours and name the offending field; 5xx messages are generic, whatever the cause,
 * except that a busy 503 says which bound was hit.
 */
export function toHttpError(error: unknown): HttpError {
  if (!(error instanceof TRPCError)) return { status: 500, message: 'Internal server error.' };
  const status = getHTTPStatusCodeFromError(error);
  if (isBusy(error)) return { status, message: error.message, headers: { 'Retry-After': '1' } };
  if (status >= 500) return { status, message: GENERIC_5XX[status] ?? 'Internal server error.' };
  const issues = validationIssues(error);
  const message = issues === undefined ? error.message : describeIssues(issues);
  if (status === 401) {
    const challenge = error.message.startsWith('Missing') ? 'Bearer' : 'Bearer error="invalid_token"';
    return { status, message, headers: { 'WWW-Authenticate': challenge } };
  }
  return { status, message };
}

function validationIssues(error: TRPCError): readonly Issue[] | undefined {
  if (error.code !== 'BAD_REQUEST') return undefined;
  const cause = error.cause as { issues?: readonly Issue[] } | undefined;
  return Array.isArray(cause?.issues) && cause.issues.length > 0 ? cause.issues : undefined;
}

/**
 * One sentence naming each offending field: "Invalid request body: id is required; name must be a
 * string." `where` names what held the fields.
 */
export function describeIssues(issues: readonly Issue[], where = 'request body'): string {
  const fields = issues.filter((issue) => (issue.path?.length ?? 0) > 0);
  const whole = issues.find((issue) => (issue.path?.length ?? 0) === 0);
  if (whole !== undefined) return `The ${where} ${whole.message}.`;
  // One message per field: a value can break several checks of the same field.
  const byField = new Map<string, string>();
  for (const issue of fields) {
    const field = issue.path!.map(String).join('.');
    if (!byField.has(field)) byField.set(field, `${field} ${issue.message}`);
  }
  return `Invalid ${where}: ${[...byField.values()].join('; ')}.`;
}
