import type { AppRouter } from '@plant-store/api';
import {
  createTRPCClient,
  httpBatchLink,
  httpSubscriptionLink,
  retryLink,
  splitLink,
  type TRPCClient,
} from '@trpc/client';
import type { inferRouterOutputs } from '@trpc/server';
import { EventSource } from 'eventsource';
import superjson from 'superjson';
import { describeFailure } from './failure.ts';

/** The api's procedures, typed by its own router: `client.plants.list.query({ limit })`. */
export type PlantsClient = TRPCClient<AppRouter>;
/** What each procedure answers, as the router says (ids are `bigint`). */
export type Outputs = inferRouterOutputs<AppRouter>;

/** A subscription that failed for a reason that may pass is opened again after this, doubling to a cap. */
const RESUBSCRIBE_MS = { first: 500, max: 10_000 };

/**
 * A client of /trpc on the server that served this page, with `token` as its bearer token.
 * superjson carries int64 ids as `bigint` both ways; calls made together share one request.
 *
 * The live events come over Server-Sent Events, through the `eventsource` package rather than the
 * browser's own EventSource, which cannot send an `Authorization` header (the token must never go
 * in a URL). When the connection drops it reconnects, and tRPC resumes after the last event it
 * delivered: no event is missed or repeated across an api restart.
 */
export function createPlantsClient(token: string | (() => string), baseUrl = document.baseURI): PlantsClient {
  // Relative to the page (`/app/` → `/trpc`), so the console also works behind a path prefix.
  const url = new URL('../trpc', baseUrl).href;
  // Read at each call: a renewed token (provider sign-in) is used without a new client.
  const current = typeof token === 'string' ? () => token : token;
  const authorization = () => `Bearer ${current()}`;
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === 'subscription',
        true: [
          // EventSource retries a dropped connection itself; an answer other than 200 (a restart's
          // 503, too many streams' 429) ends it, and this opens it again with the last event id.
          retryLink({
            retry: ({ error }) => describeFailure(error).transient,
            retryDelayMs: (attempt) => Math.min(RESUBSCRIBE_MS.first * 2 ** attempt, RESUBSCRIBE_MS.max),
          }),
          httpSubscriptionLink({
            url,
            transformer: superjson,
            EventSource,
            eventSourceOptions: {
              fetch: (input, init) =>
                fetch(input, { ...init, headers: { ...init?.headers, authorization: authorization() } }),
            },
          }),
        ],
        false: httpBatchLink({
          url,
          transformer: superjson,
          headers: () => ({ authorization: authorization() }),
        }),
      }),
    ],
  });
}
