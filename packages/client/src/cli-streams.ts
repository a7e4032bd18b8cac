import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { EventIdSchema, INTEGER_LITERAL, type PlantEvent, stringifyJson } from '@plant-store/schema';
import { backoffFetch, createBackoff, MAX_WAIT_SECONDS, type RateLimitPolicy } from './backoff.ts';
import { exportPlants } from './bulk-export.ts';
import { type ImportSummary, importPlants } from './bulk-import.ts';
import { FIELD_HEADINGS, fieldCells } from './cli-fields.ts';
import {
  type Connection,
  EXIT,
  type Output,
  parseEventTypes,
  report,
  TIMEOUT_MS,
  UsageError,
  type Values,
} from './cli-support.ts';
import type { PlantStoreError } from './errors.ts';
import { countRecords, FORMATS, type Format, readPlants } from './plant-file.ts';
import { type Progress, progress } from './progress.ts';
import { createRestClient } from './rest.ts';
import { visible } from './terminal-text.ts';
import { plantsBatch } from './trpc-batch.ts';

/** The commands that stream: import and export of files of plants, and watch of the events. */

/** The server refuses a tRPC request of more calls (MAX_BATCH_CALLS in apps/api/src/trpc/http-adapter.ts). */
const MAX_BATCH_CALLS = 100;
/** Bytes of one import batch, at most: the server refuses a body over 64 KiB (BODY_LIMIT_BYTES). */
const MAX_BATCH_BYTES = 60_000;
/** Import batches in flight at once, at most. */
const MAX_CONCURRENCY = 4;
/** What `import --on-conflict` does with a plant whose id exists. */
const ON_CONFLICT = ['skip', 'update'] as const;

export async function importFile(connection: Connection, values: Values, [file]: string[], out: Output) {
  const format = fileFormat(values.format, file!);
  const onConflict = values['on-conflict'] ?? 'skip';
  if (!(ON_CONFLICT as readonly string[]).includes(onConflict)) {
    throw new UsageError(`--on-conflict must be skip or update ("${onConflict}").`);
  }
  const fromStdin = file === '-';
  if (!fromStdin) {
    const isFile = await stat(file!).then(
      (stats) => stats.isFile(),
      () => false,
    );
    if (!isFile) throw new UsageError(`there is no file "${file}".`);
  }
  let waits = 0;
  let bar: Progress | undefined;
  const backoff = createBackoff({
    onWait(seconds) {
      waits++;
      bar?.note(`(rate limited: waiting ${seconds} s)`);
    },
    onWaitRefused: waitRefused(),
  });
  // One cheap call first: a wrong token or URL fails before any line is read, and its answer
  // carries the rate limit that sizes the batches.
  const fetch = backoffFetch(backoff, { timeoutMs: TIMEOUT_MS });
  await createRestClient({ ...connection, fetch }).listPlants({ limit: 1 });
  const { batchSize, concurrency } = batching(backoff.policy);
  const batches = plantsBatch({ ...connection, backoff, timeoutMs: TIMEOUT_MS });
  const total =
    process.stderr.isTTY && !fromStdin ? await countRecords(createReadStream(file!), format) : undefined;
  bar = progress(process.stderr, 'records', total);
  const input = fromStdin ? process.stdin : createReadStream(file!);
  let summary: ImportSummary;
  try {
    summary = await importPlants(readPlants(input, format), {
      createBatch: batches.create,
      ...(onConflict === 'update' && { updateBatch: batches.update }),
      batchSize,
      batchBytes: MAX_BATCH_BYTES,
      concurrency,
      onProgress: (done) => bar.update(done),
    });
  } finally {
    bar.stop();
    batches.close();
  }
  const { created, updated, present, invalid, failed } = summary;
  for (const { line, message } of invalid) report(`plants: line ${line}: invalid: ${message}`);
  for (const { line, message } of failed) report(`plants: line ${line}: failed: ${message}`);
  if (waits > 0) {
    report(
      `plants: the server's rate limit held the import back: ${waits} batches waited as Retry-After said.`,
    );
  }
  out.print(
    out.json
      ? stringifyJson(summary)
      : `${created} created, ${onConflict === 'update' ? `${updated} updated` : `${present} already present`}, ` +
          `${invalid.length} invalid, ${failed.length} failed.`,
  );
  return invalid.length > 0 || failed.length > 0 ? EXIT.failed : EXIT.ok;
}

/** Says, once, that the server asked for a longer wait than plants makes (the 429 or 503 follows). */
function waitRefused(): (seconds: number) => void {
  let said = false;
  return (seconds) => {
    if (said) return;
    said = true;
    report(
      `plants: the server asks to retry after ${seconds} s (Retry-After); plants waits ${MAX_WAIT_SECONDS} s at most.`,
    );
  };
}

/**
 * Batches of at most the server's limit, and never more calls in flight than the token may make
 * in one rate-limit window (a batch larger than that could never pass).
 */
function batching(policy: RateLimitPolicy | undefined): { batchSize: number; concurrency: number } {
  const points = policy?.points ?? Number.POSITIVE_INFINITY;
  const batchSize = Math.max(1, Math.min(MAX_BATCH_CALLS, points));
  return { batchSize, concurrency: Math.max(1, Math.min(MAX_CONCURRENCY, Math.floor(points / batchSize))) };
}

export async function exportAll(connection: Connection, values: Values, _operands: string[], _out: Output) {
  const format = values.format === undefined ? 'ndjson' : parseFormat(values.format);
  const client = createRestClient({
    ...connection,
    fetch: backoffFetch(createBackoff({ onWaitRefused: waitRefused() }), { timeoutMs: TIMEOUT_MS }),
  });
  const bar = progress(process.stderr, 'plants');
  try {
    await exportPlants(client, process.stdout, {
      format,
      forTerminal: process.stdout.isTTY === true,
      onProgress: (written) => bar.update(written),
    });
    return EXIT.ok;
  } catch (error) {
    // The reader went away (`plants export | head`): nothing more to say.
    if ((error as { code?: string }).code === 'EPIPE') return EXIT.ok;
    throw error;
  } finally {
    bar.stop();
  }
}

function fileFormat(option: string | undefined, file: string): Format {
  if (option !== undefined) return parseFormat(option);
  const extension = extname(file).toLowerCase();
  if (extension === '.csv') return 'csv';
  if (extension === '.ndjson' || extension === '.jsonl') return 'ndjson';
  throw new UsageError(`say the format of "${file}" with --format ndjson or --format csv.`);
}

function parseFormat(text: string): Format {
  if ((FORMATS as readonly string[]).includes(text)) return text as Format;
  throw new UsageError(`--format must be ndjson or csv ("${text}").`);
}

export async function watch(connection: Connection, values: Values, _operands: string[], out: Output) {
  const client = createRestClient(connection);
  const after = values.after === undefined ? undefined : parseEventId(values.after);
  const types = values.type === undefined ? undefined : parseEventTypes(values.type, '--type');
  const stop = new AbortController();
  const end = () => stop.abort();
  process.once('SIGINT', end);
  process.once('SIGTERM', end);
  if (!out.json) out.print(eventRow(['TIME', 'EVENT', 'PLANT', ...FIELD_HEADINGS]));
  try {
    const events = client.events({
      after,
      types,
      signal: stop.signal,
      onReconnect: ({ error, delayMs }) =>
        report(`plants: ${error.serverMessage ?? failureDetail(error)}; reconnecting in ${delayMs / 1000} s`),
    });
    for await (const event of events) out.print(out.json ? stringifyJson(event) : eventLine(event));
  } finally {
    process.off('SIGINT', end);
    process.off('SIGTERM', end);
  }
  return EXIT.ok;
}

/** One event as a row: time, type, plant id, its fields (a delete has none). */
function eventLine({ createdAt, type, plant }: PlantEvent): string {
  return eventRow([createdAt, type, String(plant.id), ...fieldCells(plant).map(visible)]);
}

/** Fixed widths for what has a bound (an ISO time, the event type, an int64), so rows align as they come. */
function eventRow([time, type, id, ...fields]: string[]): string {
  return [time!.padEnd(24), type!.padEnd(13), id!.padStart(20), ...fields].join('  ').trimEnd();
}

/** What a PlantStoreError without a server message says after the method and URL. */
function failureDetail(error: PlantStoreError): string {
  return error.message.slice(error.message.indexOf(': ') + 2);
}

function parseEventId(text: string): bigint {
  const parsed = INTEGER_LITERAL.test(text) ? EventIdSchema.safeParse(BigInt(text)) : undefined;
  if (parsed?.success) return parsed.data;
  throw new UsageError(`--after must be an event id, an integer from 0 to 9223372036854775807 ("${text}").`);
}
