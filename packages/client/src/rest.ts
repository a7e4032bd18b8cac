import {
  INTEGER_LITERAL,
  type ListPlantsQuery,
  type NewPlant,
  type Plant,
  type PlantEvent,
  type PlantId,
  PlantIdSchema,
  type PlantPatch,
  PlantSchema,
  type PlantVersion,
  PlantVersionSchema,
  type PlantWithId,
  PlantWithIdSchema,
} from '@plant-store/schema';
import { z } from 'zod';
import { isPreconditionFailed, PlantStoreError } from './errors.ts';
import { everyPlant, nextPageProblem } from './plant-pages.ts';
import { createEndpointsClient, type WebhookEndpointsClient } from './rest-endpoints.ts';
import { type EventsOptions, streamEvents } from './rest-events.ts';
import {
  type Answer,
  type Call,
  type CallOptions,
  createSender,
  MERGE_PATCH,
  unusableAnswer,
} from './rest-send.ts';
import { deleteAttempts, keyFor, type RetryOptions, withRetries } from './retry.ts';

export type {
  DeliveriesQuery,
  DeliveryPage,
  EndpointCallOptions,
  WebhookEndpointsClient,
} from './rest-endpoints.ts';
export type { EventsOptions } from './rest-events.ts';
export { type CallOptions, isPreconditionFailed, PlantStoreError, type RetryOptions };

/**
 * Options of a conditional change (`updatePlant`, `deletePlant`): the change is made only while the
 * plant is as the caller last saw it; otherwise the call fails with a 412 {@link PlantStoreError}
 * (`isPreconditionFailed`) and nothing changes. Give one of the two.
 */
export type ConditionalOptions = CallOptions &
  (
    | {
        /** Sent as `If-Match`: an ETag as a read answered it (`"42"`), or `*` (the plant exists). */
        ifMatch?: string;
        expectedVersion?: never;
      }
    | {
        /** The plant's `version` as a read answered it: sent as `If-Match: "<version>"`. */
        expectedVersion?: PlantVersion;
        ifMatch?: never;
      }
  );

/** Options of {@link RestClient.getPlant}. */
export type GetOptions = CallOptions & {
  /**
   * Sent as `If-None-Match`: an ETag the caller holds (`"42"`), or `*`. When the plant still has
   * it, the server answers 304 and `getPlant` resolves to {@link NotModified} instead of the plant.
   */
  ifNoneMatch?: string;
};

/** What `getPlant` with `ifNoneMatch` resolves to when the plant has not changed (304). */
export type NotModified = {
  notModified: true;
  /** The plant's current ETag. */
  etag: string;
};

/** A plant as `getPlant` and `updatePlant` resolve to it: `PlantWithId` (with `version`) and its `ETag`. */
export type PlantWithEtag = PlantWithId & {
  /** The strong ETag of this version, `"<version>"`: pass it as `ifMatch` or `ifNoneMatch`. */
  etag: string;
};

/**
 * What `createPlant` resolves to: the server's `Plant` answer, with the new plant's version and ETag
 * from its `ETag` header (a replayed answer has the first one's). Both are absent only from an api
 * older than keyed answers with versions.
 */
export type CreatedPlant = Plant & { version?: PlantVersion; etag?: string };

/** Options of {@link createRestClient}. */
export type RestClientOptions = {
  /** Where the server is, such as `http://127.0.0.1:3000` (no trailing `/plants`). */
  baseUrl: string | URL;
  /** A bearer token the server accepts (one of its `API_TOKENS`). */
  token: string;
  /** The `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
  /**
   * How creates, updates and deletes are retried (see {@link RetryOptions}); 3 attempts by default. While
   * retries are on, each of them carries an `Idempotency-Key` (a new random UUID).
   */
  retry?: RetryOptions;
};

/** One page of {@link RestClient.listPlants}. */
export type PlantPage = {
  /** The plants of this page, in ascending id order. */
  plants: PlantWithId[];
  /**
   * The `after` of the next page (the server's `Link: <…>; rel="next"`), or `undefined` when this
   * page is the last one. It always comes after this page's plants and the `after` asked for (an
   * answer whose next page does not is a `PlantStoreError`): reading page after page never reads
   * one twice, and every page read adds plants.
   */
  next: PlantId | undefined;
};

/** The Plant Store over its REST API. Every method throws only {@link PlantStoreError}. */
export type RestClient = {
  /**
   * `POST /plants`: creates a plant and resolves to it as the server answered (`Plant`, no id), with
   * the new plant's `version` and `etag` (from the `ETag` header, which a replayed answer carries too).
   */
  createPlant(plant: NewPlant, options?: CallOptions): Promise<CreatedPlant>;
  /**
   * `GET /plants`: one page of at most `limit` plants (server default 100, at most 1000) with ids
   * greater than `after`; only those tagged `tag` and whose name starts with `name_prefix`, when
   * given. Pass the page's `next` as `after` (with the same filters) to read the following page.
   */
  listPlants(query?: ListPlantsQuery, options?: CallOptions): Promise<PlantPage>;
  /**
   * Every plant `query` selects (`tag`, `name_prefix`; from `after`), in id order, reading pages of
   * `limit` as the loop goes, each after the one before (`listPlants` checks it).
   */
  allPlants(query?: ListPlantsQuery, options?: CallOptions): AsyncIterable<PlantWithId>;
  /**
   * `GET /plants/{id}`: the plant with this id and its ETag; a 404 `PlantStoreError` when there is
   * none. With `ifNoneMatch`, resolves to {@link NotModified} when the plant still has that ETag.
   */
  getPlant(id: PlantId, options?: CallOptions & { ifNoneMatch?: undefined }): Promise<PlantWithEtag>;
  getPlant(id: PlantId, options: GetOptions): Promise<PlantWithEtag | NotModified>;
  /**
   * `PATCH /plants/{id}` (a JSON Merge Patch): changes the fields `patch` names (`tag: null` removes
   * the tag) and resolves to the plant as it is now, with its new version and ETag. A patch that
   * changes nothing keeps the version. 404 when there is no such plant; 412 when `ifMatch` /
   * `expectedVersion` is not the plant's. Retried like `createPlant`, with an `Idempotency-Key`.
   */
  updatePlant(id: PlantId, patch: PlantPatch, options?: ConditionalOptions): Promise<PlantWithEtag>;
  /**
   * `DELETE /plants/{id}`: deletes the plant; a 404 `PlantStoreError` when there is none, 412 when
   * `ifMatch` / `expectedVersion` is not the plant's.
   */
  deletePlant(id: PlantId, options?: ConditionalOptions): Promise<void>;
  /**
   * `GET /plants/events`: every create, update and delete committed from now on (or after the event id
   * `after`; `0n` for every event the server still keeps), in order, as they commit; only those of
   * `types` when given (event ids then have gaps: they are the log's). It reconnects
   * by itself after a network error, a dropped connection or a 429/503, resuming after the last
   * event it delivered (no gap, no repeat), and throws a {@link PlantStoreError} only on an answer
   * that retrying cannot fix (400, 401, 403, 410: the events after `after` are no longer kept…).
   * It ends when the loop over it stops (`break`) or `signal` aborts.
   *
   * ```ts
   * for await (const event of client.events({ after: 0n })) console.log(event.type, event.plant.id);
   * ```
   */
  events(options?: EventsOptions): AsyncIterable<PlantEvent>;
  /** The token's own webhook endpoints and their deliveries: `client.endpoints.create({ url })`. */
  endpoints: WebhookEndpointsClient;
};

const PlantListSchema = z.array(PlantWithIdSchema);
/** A strong ETag as the api writes a version: the decimal number in double quotes. */
const VERSION_ETAG = /^"([0-9]{1,19})"$/;

/**
 * A client of the REST API needing only `fetch` and `@plant-store/schema`. Bodies go out and come
 * back through the exact JSON codec, so int64 ids never lose a digit.
 */
export function createRestClient(options: RestClientOptions): RestClient {
  const sendOnce = createSender(options);
  // Retried: keyed calls (the server answers a repeat of one that did commit as it did then), and
  // calls whose repeat changes nothing more. Never a create, rotation or ping without a key.
  const send = <T>(request: Call<T>, call: CallOptions = {}) => {
    const once = () => sendOnce(request, call);
    if (request.idempotencyKey !== undefined || request.repeatable === 'safe') {
      return withRetries(once, options.retry, call.signal);
    }
    if (request.repeatable === 'delete') {
      const done: Answer<T> = { data: undefined as T, status: 204, headers: new Headers(), url: '' };
      return withRetries(deleteAttempts(once, done), options.retry, call.signal);
    }
    return once();
  };
  const getPlant = async (id: PlantId, { ifNoneMatch, ...call }: GetOptions = {}) => {
    const answer = await send(
      {
        method: 'GET',
        path: `/plants/${id}`,
        answer: PlantWithIdSchema,
        ...(ifNoneMatch !== undefined && { conditions: { 'if-none-match': ifNoneMatch } }),
      },
      call,
    );
    if (answer.status === 304) {
      return { notModified: true, etag: answer.headers.get('etag') ?? ifNoneMatch! } satisfies NotModified;
    }
    return { ...answer.data, etag: etagOf(answer.data.version) };
  };
  const listPlants = async ({ limit, after, tag, name_prefix }: ListPlantsQuery = {}, call?: CallOptions) => {
    const query: Record<string, string> = {};
    if (limit !== undefined) query.limit = String(limit);
    if (after !== undefined) query.after = String(after);
    if (tag !== undefined) query.tag = tag;
    if (name_prefix !== undefined) query.name_prefix = name_prefix;
    const answer = await send(
      { method: 'GET', path: '/plants', query, answer: PlantListSchema, next: 'after' },
      call,
    );
    return { plants: answer.data, next: nextAfter(answer, after) };
  };
  return {
    async createPlant(plant, call) {
      const idempotencyKey = keyFor(call?.idempotencyKey, options.retry);
      const answer = await send(
        { method: 'POST', path: '/plants', body: plant, answer: PlantSchema, idempotencyKey },
        call,
      );
      const etag = answer.headers.get('etag');
      if (etag === null) return answer.data;
      const version = VERSION_ETAG.exec(etag)?.[1];
      const parsed = version === undefined ? undefined : PlantVersionSchema.safeParse(BigInt(version));
      if (!parsed?.success) throw unusableAnswer(answer, 'POST', `its ETag (${etag}) is not a plant version`);
      return { ...answer.data, version: parsed.data, etag };
    },
    listPlants,
    allPlants: (query = {}, call) =>
      everyPlant((after) => listPlants({ ...query, after }, call), query.after),
    getPlant: getPlant as RestClient['getPlant'],
    async updatePlant(id, patch, call = {}) {
      const idempotencyKey = keyFor(call.idempotencyKey, options.retry);
      const answer = await send(
        {
          method: 'PATCH',
          path: `/plants/${id}`,
          body: patch,
          contentType: MERGE_PATCH,
          answer: PlantWithIdSchema,
          conditions: ifMatchHeader(call),
          idempotencyKey,
        },
        call,
      );
      return { ...answer.data, etag: etagOf(answer.data.version) };
    },
    async deletePlant(id, call = {}) {
      const idempotencyKey = keyFor(call.idempotencyKey, options.retry);
      await send(
        {
          method: 'DELETE',
          path: `/plants/${id}`,
          answer: undefined,
          conditions: ifMatchHeader(call),
          idempotencyKey,
        },
        call,
      );
    },
    events: (events) => streamEvents(options, events),
    endpoints: createEndpointsClient(send),
  };
}

/** The strong ETag of a plant version, as the api sends it. */
function etagOf(version: PlantVersion): string {
  return `"${version}"`;
}

/** The `If-Match` header of a conditional change. */
function ifMatchHeader({ ifMatch, expectedVersion }: ConditionalOptions): Call<unknown>['conditions'] {
  const value = expectedVersion === undefined ? ifMatch : etagOf(expectedVersion);
  return value === undefined ? undefined : { 'if-match': value };
}

/**
 * The `after` of the page following `answer`, which must come after its plants (the api's is the
 * last plant's id) and after the `after` it was asked with: a server whose next page repeats one
 * would keep a reader of every page going forever.
 */
function nextAfter(answer: Answer<PlantWithId[]>, after: PlantId | undefined): PlantId | undefined {
  const { data, next } = answer;
  if (next === undefined) return undefined;
  const parsed = INTEGER_LITERAL.test(next) ? PlantIdSchema.safeParse(BigInt(next)) : undefined;
  const problem = parsed?.success
    ? nextPageProblem(data, parsed.data, after)
    : `its next page's after (${next}) is not a plant id`;
  if (problem !== undefined) throw unusableAnswer(answer, 'GET', problem);
  return parsed!.data;
}
