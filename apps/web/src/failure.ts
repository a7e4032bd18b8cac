import { TRPCClientError } from '@trpc/client';

/** What went wrong with a call, in the terms the console shows and acts on. */
export type Failure = {
  kind:
    | 'unreachable'
    | 'unauthorized'
    | 'forbidden'
    | 'not-found'
    | 'conflict'
    | 'gone'
    | 'stale'
    | 'invalid'
    | 'rate-limited'
    | 'unavailable'
    | 'unexpected';
  /** The HTTP status of the answer; 0 when none arrived. */
  status: number;
  /** One sentence for people: the server's own message when it sent one. */
  message: string;
  /** How long the server asked to wait (`Retry-After`), in seconds. */
  retryAfterSeconds?: number;
  /** Whether trying again later may succeed (no answer, too many requests, the api busy or restarting). */
  transient: boolean;
};

const KIND_BY_STATUS: Record<number, Failure['kind']> = {
  0: 'unreachable',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not-found',
  409: 'conflict',
  410: 'gone',
  // The version sent (`expectedVersion`) is no longer the plant's: someone else changed it.
  412: 'stale',
  429: 'rate-limited',
};
const TRANSIENT = new Set([0, 408, 429, 500, 502, 503, 504]);

/**
 * Reads a failed call: tRPC's error body when the api answered one (its message is the one REST
 * would give; the limits in front of /trpc answer so too), else what the answer itself says (no
 * answer, a proxy's page): its status and `Retry-After` still tell what happened.
 */
export function describeFailure(error: unknown): Failure {
  if (!(error instanceof TRPCClientError)) {
    return { kind: 'unexpected', status: 0, message: String(error), transient: false };
  }
  const response = error.meta?.response as Response | undefined;
  // `data.httpStatus`: the call's own status (also inside a batch); a subscription's EventSource
  // failure carries the status as its `code`; no status at all is no answer.
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  const status: number = error.data?.httpStatus ?? response?.status ?? (typeof code === 'number' ? code : 0);
  const retryAfter = Number.parseInt(response?.headers.get('retry-after') ?? '', 10);
  const retryAfterSeconds = Number.isFinite(retryAfter) ? retryAfter : undefined;
  const kind =
    KIND_BY_STATUS[status] ?? (status >= 500 ? 'unavailable' : status >= 400 ? 'invalid' : 'unexpected');
  return {
    kind,
    status,
    message: error.data ? error.message : describeStatus(kind, status, retryAfterSeconds),
    ...(retryAfterSeconds !== undefined && { retryAfterSeconds }),
    transient: TRANSIENT.has(status),
  };
}

function describeStatus(kind: Failure['kind'], status: number, retryAfterSeconds?: number): string {
  const wait = retryAfterSeconds === undefined ? '' : ` Retry in ${retryAfterSeconds} s.`;
  switch (kind) {
    case 'unreachable':
      return 'Cannot reach the Plant Store api.';
    case 'rate-limited':
      return `Too many requests.${wait}`;
    case 'unauthorized':
      return 'The token is not accepted.';
    case 'unavailable':
      return `The api is unavailable (${status}).${wait}`;
    default:
      return `The api answered ${status}.`;
  }
}
