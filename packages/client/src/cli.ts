import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import {
  EventIdSchema,
  INTEGER_LITERAL,
  ListPlantsQuerySchema,
  MAX_LIST_LIMIT,
  type NewPlant,
  type PlantEvent,
  type PlantId,
  PlantIdSchema,
  PlantPatchSchema,
  type PlantWithId,
  stringifyJson,
} from '@plant-store/schema';
import { backoffFetch, createBackoff, MAX_WAIT_SECONDS, type RateLimitPolicy } from './backoff.ts';
import { exportPlants } from './bulk-export.ts';
import { type ImportSummary, importPlants } from './bulk-import.ts';
import { ENDPOINT_COMMANDS } from './cli-endpoints.ts';
import { LoginError, savedToken, signIn } from './cli-login.ts';
import {
  type Command,
  type Connection,
  callOptions,
  EXIT,
  type Output,
  parse,
  parseEventTypes,
  printTable,
  report,
  TIMEOUT_MS,
  UsageError,
  type Values,
} from './cli-support.ts';
import { PlantStoreError } from './errors.ts';
import { countRecords, FORMATS, type Format, PlantFileError, readPlants } from './plant-file.ts';
import { type Progress, progress } from './progress.ts';
import { createRestClient } from './rest.ts';
import { visible } from './terminal-text.ts';
import { plantsBatch } from './trpc-batch.ts';

const DEFAULT_URL = 'http://127.0.0.1:3000';
/** The server refuses a tRPC request of more calls (MAX_BATCH_CALLS in apps/api/src/trpc/http-adapter.ts). */
const MAX_BATCH_CALLS = 100;
/** Bytes of one import batch, at most: the server refuses a body over 64 KiB (BODY_LIMIT_BYTES). */
const MAX_BATCH_BYTES = 60_000;
/** Import batches in flight at once, at most. */
const MAX_CONCURRENCY = 4;
/** `list --all` holds every plant to print them: it stops past this many unless --max-plants says. */
const MAX_LISTED_PLANTS = 100_000;
/** …or past this many characters of names and tags (a plant's name has no upper bound when read). */
const MAX_LISTED_TEXT = 64 * 1024 * 1024;

const USAGE = `Usage: plants <command> [options]

Commands:
  create --id <id> --name <name> [--tag <tag>]   create a plant
  list [--tag <tag>] [--name-prefix <text>] [--limit <n>] [--after <id>] [--all]
       [--max-plants <n>]                        list plants in id order, only those with that
                                                 tag and whose name starts with that text
                                                 (case-sensitive) when given (--all: every page,
                                                 up to --max-plants, default ${MAX_LISTED_PLANTS},
                                                 else exit 1: export streams any number)
  get <id> [--etag]                              show one plant (--etag: only its ETag, such as
                                                 "42", for --if-match)
  update <id> [--name <name>] [--tag <tag> | --clear-tag] [--if-match <etag>]
                                                 change a plant's name or tag and show it;
                                                 --if-match: only if its ETag (or version) is
                                                 still that one, else exit 1 with 412
  delete <id> [--if-match <etag>]                delete one plant
  import <file> [--format ndjson|csv] [--on-conflict skip|update]
                                                 create the plants of a file (- reads stdin);
                                                 an id that exists is skipped, or with update
                                                 changed to what its line says
  export [--format ndjson|csv]                   write every plant to stdout (default ndjson)
  watch [--after <event id>] [--type <type>]     print creates, updates and deletes live until
                                                 Ctrl-C (exit 0); reconnects by itself and
                                                 resumes where it left off. --after: start after
                                                 that event id (0: every event the server keeps);
                                                 --type: only plant.created, plant.updated or
                                                 plant.deleted (repeat it, or list them with commas)

Signing in (when the server names an identity provider; PLANTS_TOKEN and --token still win):
  login                                          sign in with the device flow: open the address
                                                 it prints and approve; tokens are kept, for
                                                 this --url, in $XDG_CONFIG_HOME/plant-store/
                                                 credentials.json (mode 0600) and refreshed
  logout                                         forget them (and revoke the refresh token)

Webhook endpoints (the token's own; it needs the webhooks scope):
  endpoints add <url> [--description <text>] [--events <types>]
                                                 register an endpoint; prints its id and its
                                                 signing secret, shown this once only. --events:
                                                 what it receives, such as
                                                 plant.created,plant.updated (default
                                                 plant.created)
  endpoints list                                 the token's endpoints, oldest first
  endpoints update <id> [--events <types>] [--description <text> | --clear-description]
                                                 change what an endpoint receives or its note
  endpoints rm <id>                              delete an endpoint and its deliveries
  endpoints rotate <id>                          a new signing secret; prints it, and until when
                                                 the previous one still signs alongside it
  endpoints deliveries <id> [--limit <n>] [--before <delivery id>] [--all]
                                                 recent deliveries, newest first: id, event,
                                                 status, attempts, last response code, next
                                                 attempt (--json: one JSON object per line)
  endpoints redeliver <id> <delivery id>         send a delivery again (same webhook-id)
  endpoints ping <id>                            send a webhook.ping test delivery

Options:
  --url <url>      the server (default: $PLANTS_URL, else ${DEFAULT_URL})
  --token <token>  the bearer token (default: $PLANTS_TOKEN; prefer the variable: arguments are
                   visible to other users of the machine)
  --json           print JSON (ids as exact integers) instead of a table, for watch one event
                   per line; errors go to stderr as the server's Error body
                   {"error": <status>, "message": "..."}
  -h, --help       show this help
  --version        show the version

--type and --events take lists: repeat them, or list the types with commas. Any other option
given twice is wrong usage (exit 2): nothing is sent.

Ids are signed 64-bit integers, kept exact. A negative id needs "=" or "--":
  plants create --id=-5 --name Fern    plants get -- -5

Server text (names, tags, messages…) is shown with the characters a terminal would obey (ESC,
other control characters, bidi overrides) written as \\u001b-style escapes; JSON escapes them the
same way, so it still reads back exactly. A CSV export starts a name or tag that a spreadsheet
would run as a formula (=, +, -, @, tab, CR) with ', which import takes off again. import and
export wait out a Retry-After of up to ${MAX_WAIT_SECONDS} s; a longer one fails at once.

Files: NDJSON has one {"id": 1, "name": "Fern", "tag": "herb"} per line; CSV has a header naming
its columns (id,name[,tag]), an empty tag field for no tag and "" for the empty tag. The format
comes from the extension (.ndjson, .jsonl, .csv) unless --format says it. import checks each
line before sending it (invalid lines are reported on stderr with their line number), creates
the plants in tRPC batches within the token's rate limit (waiting as 429's Retry-After says),
counts plants that already exist as already present (so a re-run resumes) or, with
--on-conflict update, updates them to their line (its name, and its tag: a line without one
removes it), and ends with a summary on stdout (--json: as JSON). import and export show a
progress bar on stderr when it is a terminal; export writes the plants to stdout in id order,
ids exact.

Exit status: 0 ok, 1 the server answered with an error (import: a line was invalid or failed),
2 wrong usage (nothing sent), 3 no answer from the server (not reachable, or no answer within ${TIMEOUT_MS / 1000} s);
watch keeps retrying instead, and exits 0 on Ctrl-C (SIGINT) or SIGTERM.
`;

const GLOBAL = ['url', 'token', 'json', 'help', 'version'];

async function main(argv: string[]): Promise<number> {
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parse(argv));
  } catch (error) {
    return usageFailure((error as Error).message);
  }
  if (values.version) {
    const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
    process.stdout.write(`${version}\n`);
    return EXIT.ok;
  }
  const [command, ...operands] = positionals;
  if (values.help || command === 'help') {
    process.stdout.write(USAGE);
    return EXIT.ok;
  }
  const json = values.json === true;
  try {
    if (command === 'login' || command === 'logout')
      return await signIn(command, serverUrl(values), operands, process.env);
    const { name, spec, given } = findCommand(command, operands);
    const misplaced = Object.keys(values).filter(
      (key) => !GLOBAL.includes(key) && !spec.options.includes(key),
    );
    if (misplaced.length > 0) throw new UsageError(`${name} takes no --${misplaced[0]}.`);
    if (given.length !== spec.operands) {
      throw new UsageError(
        spec.operands === 0
          ? `${name} takes no operand ("${given[0]}").`
          : `${name} needs ${spec.needs ?? 'one id'}.`,
      );
    }
    const connection = await connect(values);
    const output: Output = { json, print: (line) => process.stdout.write(`${visible(line)}\n`) };
    const run = () => spec.run(connection, values, given, output);
    const tracing = await startTracing();
    return await (tracing ? tracing.run(`plants ${name}`, run) : run());
  } catch (error) {
    if (error instanceof UsageError) return usageFailure(error.message);
    if (error instanceof PlantFileError) {
      report(`plants: ${error.message}`);
      return EXIT.failed;
    }
    if (error instanceof PlantStoreError) return callFailure(error, json);
    if (error instanceof LoginError) {
      report(`plants: ${error.message}`);
      return EXIT.failed;
    }
    throw error;
  }
}

async function create(connection: Connection, values: Values, _operands: string[], out: Output) {
  const client = createRestClient(connection);
  if (values.id === undefined) throw new UsageError('create needs --id <id>.');
  if (values.name === undefined) throw new UsageError('create needs --name <name>.');
  const id = parseId(values.id, '--id');
  const plant = await client.createPlant(
    { id, name: values.name, ...(values.tag !== undefined && { tag: values.tag }) },
    callOptions(),
  );
  showPlants([{ id, ...plant }], out, 'one');
  return EXIT.ok;
}

async function update(connection: Connection, values: Values, [text]: string[], out: Output) {
  const id = parseId(text!, 'the id');
  if (values.tag !== undefined && values['clear-tag'])
    throw new UsageError('give --tag or --clear-tag, not both.');
  const patch = {
    ...(values.name !== undefined && { name: values.name }),
    ...(values.tag !== undefined && { tag: values.tag }),
    ...(values['clear-tag'] && { tag: null }),
  };
  if (Object.keys(patch).length === 0) throw new UsageError('update needs --name, --tag or --clear-tag.');
  // Checked here as the server would: a bad value is wrong usage, with nothing sent.
  const parsed = PlantPatchSchema.safeParse(patch);
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    throw new UsageError(`--${String(issue?.path[0])} ${issue?.message}.`);
  }
  const plant = await createRestClient(connection).updatePlant(id, patch, conditional(values));
  showPlants([plant], out, 'one');
  return EXIT.ok;
}

async function list(connection: Connection, values: Values, _operands: string[], out: Output) {
  const client = createRestClient(connection);
  const limit = values.limit === undefined ? undefined : parseLimit(values.limit);
  let after = values.after === undefined ? undefined : parseId(values.after, '--after');
  if (values['max-plants'] !== undefined && !values.all) throw new UsageError('--max-plants needs --all.');
  const maxPlants =
    values['max-plants'] === undefined ? MAX_LISTED_PLANTS : parseCount(values['max-plants'], '--max-plants');
  const filters = parseFilters(values);
  const plants: PlantWithId[] = [];
  let text = 0;
  let next: PlantId | undefined;
  do {
    const page = await client.listPlants({ limit, after, ...filters }, callOptions());
    plants.push(...page.plants);
    for (const { name, tag } of page.plants) text += name.length + (tag?.length ?? 0);
    next = page.next;
    after = next;
    // Every page adds plants (listPlants refuses a next page that would not): this ends the loop.
    if (values.all && (plants.length > maxPlants || (next !== undefined && plants.length >= maxPlants))) {
      report(
        `plants: list --all reads at most ${maxPlants} plants (--max-plants), and the server has more; ` +
          'plants export writes any number.',
      );
      return EXIT.failed;
    }
    if (values.all && text > MAX_LISTED_TEXT) {
      report(
        `plants: list --all reads at most ${MAX_LISTED_TEXT} characters of names and tags, and the server ` +
          'has more; plants export writes any number.',
      );
      return EXIT.failed;
    }
  } while (values.all && next !== undefined);
  if (out.json) {
    out.print(stringifyJson({ plants, next: next ?? null }));
    return EXIT.ok;
  }
  showPlants(plants, out, 'many');
  if (next !== undefined) {
    const again = [
      ...(filters.tag === undefined ? [] : ['--tag', shellWord(filters.tag)]),
      ...(filters.name_prefix === undefined ? [] : ['--name-prefix', shellWord(filters.name_prefix)]),
    ].join(' ');
    report(`More plants follow: plants list ${again && `${again} `}--after ${next} (or --all)`);
  }
  return EXIT.ok;
}

async function get(connection: Connection, values: Values, [id]: string[], out: Output) {
  if (values.etag && out.json) throw new UsageError('--etag prints the ETag alone: leave out --json.');
  const plant = await createRestClient(connection).getPlant(parseId(id!, 'the id'), callOptions());
  if (values.etag) out.print(plant.etag);
  else showPlants([plant], out, 'one');
  return EXIT.ok;
}

async function remove(connection: Connection, values: Values, [text]: string[], out: Output) {
  const id = parseId(text!, 'the id');
  await createRestClient(connection).deletePlant(id, conditional(values));
  out.print(out.json ? stringifyJson({ id, deleted: true }) : `Deleted plant ${id}.`);
  return EXIT.ok;
}

/** What `import --on-conflict` does with a plant whose id exists. */
const ON_CONFLICT = ['skip', 'update'] as const;

async function importFile(connection: Connection, values: Values, [file]: string[], out: Output) {
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

async function exportAll(connection: Connection, values: Values, _operands: string[], _out: Output) {
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

async function watch(connection: Connection, values: Values, _operands: string[], out: Output) {
  const client = createRestClient(connection);
  const after = values.after === undefined ? undefined : parseEventId(values.after);
  const types = values.type === undefined ? undefined : parseEventTypes(values.type, '--type');
  const stop = new AbortController();
  const end = () => stop.abort();
  process.once('SIGINT', end);
  process.once('SIGTERM', end);
  if (!out.json) out.print(eventRow(['TIME', 'EVENT', 'PLANT', 'NAME', 'TAG']));
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

/** One event as a row: time, type, plant id, name, tag (a delete has neither name nor tag). */
function eventLine({ createdAt, type, plant }: PlantEvent): string {
  const { name = '', tag = '' } = 'name' in plant ? plant : {};
  return eventRow([createdAt, type, String(plant.id), visible(name), visible(tag)]);
}

/** Fixed widths for what has a bound (an ISO time, the event type, an int64), so rows align as they come. */
function eventRow([time, type, id, name, tag]: string[]): string {
  return [time!.padEnd(24), type!.padEnd(13), id!.padStart(20), name, tag].join('  ').trimEnd();
}

/** What a PlantStoreError without a server message says after the method and URL. */
function failureDetail(error: PlantStoreError): string {
  return error.message.slice(error.message.indexOf(': ') + 2);
}

const COMMANDS = new Map<string, Command>([
  ['create', { options: ['id', 'name', 'tag'], operands: 0, run: create }],
  [
    'list',
    { options: ['limit', 'after', 'all', 'max-plants', 'tag', 'name-prefix'], operands: 0, run: list },
  ],
  ['get', { options: ['etag'], operands: 1, run: get }],
  ['update', { options: ['name', 'tag', 'clear-tag', 'if-match'], operands: 1, run: update }],
  ['delete', { options: ['if-match'], operands: 1, run: remove }],
  ['import', { options: ['format', 'on-conflict'], operands: 1, needs: 'one file', run: importFile }],
  ['export', { options: ['format'], operands: 0, run: exportAll }],
  ['watch', { options: ['after', 'type'], operands: 0, run: watch }],
]);

/** Commands with subcommands: `plants endpoints add …`. */
const GROUPS = new Map<string, Map<string, Command>>([['endpoints', ENDPOINT_COMMANDS]]);

/** The command a command line names (`get`, or a group's subcommand: `endpoints add`), and its operands. */
function findCommand(command: string | undefined, operands: string[]) {
  if (command === undefined) throw new UsageError('a command is needed.');
  const group = GROUPS.get(command);
  if (group === undefined) {
    const spec = COMMANDS.get(command);
    if (spec === undefined) throw new UsageError(`unknown command "${command}".`);
    return { name: command, spec, given: operands };
  }
  const [sub, ...given] = operands;
  const spec = sub === undefined ? undefined : group.get(sub);
  if (spec === undefined) {
    const known = [...group.keys()].join(', ');
    throw new UsageError(
      sub === undefined
        ? `${command} needs a subcommand (${known}).`
        : `unknown ${command} subcommand "${sub}" (${known}).`,
    );
  }
  return { name: `${command} ${sub}`, spec, given };
}

/**
 * The command's span, with OpenTelemetry's standard variables (docs/tracing.md): the SDK is loaded
 * only when an endpoint is set.
 */
async function startTracing() {
  const { OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT } = process.env;
  if (!OTEL_EXPORTER_OTLP_ENDPOINT && !OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  return (await import('./cli-tracing.ts')).startCliTracing(process.env);
}

async function connect(values: Values): Promise<Connection> {
  const baseUrl = serverUrl(values);
  const token = values.token ?? process.env.PLANTS_TOKEN ?? (await savedToken(baseUrl, process.env));
  if (token === undefined || token === '') {
    throw new UsageError(
      'a bearer token is needed: set PLANTS_TOKEN (or pass --token), or run plants login.',
    );
  }
  return { baseUrl, token };
}

/** The server: --url, else $PLANTS_URL, else the default; an http(s) URL. */
function serverUrl(values: Values): string {
  const baseUrl = values.url ?? process.env.PLANTS_URL ?? DEFAULT_URL;
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UsageError(`the URL "${baseUrl}" is not a URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`the URL "${baseUrl}" is not http: or https:.`);
  }
  return baseUrl;
}

function parseId(text: string, what: string): bigint {
  const parsed = INTEGER_LITERAL.test(text) ? PlantIdSchema.safeParse(BigInt(text)) : undefined;
  if (parsed?.success) return parsed.data;
  throw new UsageError(
    `${what} must be an integer from -9223372036854775808 to 9223372036854775807 ("${text}").`,
  );
}

function parseEventId(text: string): bigint {
  const parsed = INTEGER_LITERAL.test(text) ? EventIdSchema.safeParse(BigInt(text)) : undefined;
  if (parsed?.success) return parsed.data;
  throw new UsageError(`--after must be an event id, an integer from 0 to 9223372036854775807 ("${text}").`);
}

const FiltersSchema = ListPlantsQuerySchema.pick({ tag: true, name_prefix: true });

/** `--tag` and `--name-prefix`, checked as the server checks them (too long: wrong usage, nothing sent). */
function parseFilters(values: Values) {
  const parsed = FiltersSchema.safeParse({
    ...(values.tag !== undefined && { tag: values.tag }),
    ...(values['name-prefix'] !== undefined && { name_prefix: values['name-prefix'] }),
  });
  if (parsed.success) return parsed.data;
  const [issue] = parsed.error.issues;
  throw new UsageError(`--${issue?.path[0] === 'tag' ? 'tag' : 'name-prefix'} ${issue?.message}.`);
}

function parseCount(text: string, what: string): number {
  if (/^[1-9][0-9]{0,8}$/.test(text)) return Number(text);
  throw new UsageError(`${what} must be an integer from 1 to 999999999 ("${text}").`);
}

function parseLimit(text: string): number {
  const parsed = /^[0-9]{1,9}$/.test(text)
    ? ListPlantsQuerySchema.shape.limit.safeParse(Number(text))
    : undefined;
  if (parsed?.success) return parsed.data;
  throw new UsageError(`--limit must be an integer from 1 to ${MAX_LIST_LIMIT} ("${text}").`);
}

/** Plants as JSON (one object, or an array) or as a table with one row each. */
function showPlants(plants: Shown[], out: Output, shape: 'one' | 'many'): void {
  if (out.json) {
    out.print(stringifyJson(shape === 'one' ? bodyOf(plants[0]!) : plants.map(bodyOf)));
    return;
  }
  if (plants.length === 0) {
    out.print('No plants.');
    return;
  }
  const rows = plants.map((p) => [String(p.id), visible(p.name), visible(p.tag ?? '')]);
  printTable(out, [['ID', 'NAME', 'TAG'], ...rows], [0]);
}

/** A plant to show: with its version (which an older api left out of a replayed create). */
type Shown = NewPlant & { version?: bigint };

/** A plant as the api's bodies show it, whatever else the client added (its `etag`). */
function bodyOf({ id, name, tag, version }: Shown): Shown {
  return { id, name, ...(tag !== undefined && { tag }), ...(version !== undefined && { version }) };
}

/** The options of a call that changes a plant: its timeout, and `--if-match` when given. */
function conditional(values: Values) {
  const ifMatch = values['if-match'];
  return { ...callOptions(), ...(ifMatch !== undefined && { ifMatch: parseEtags(ifMatch) }) };
}

/** `*`, or a comma-separated list of entity tags (RFC 9110 §8.8.3). */
const ETAGS = /^(?:\*|(?:W\/)?"[\x21\x23-\x7e]*"(?:\s*,\s*(?:W\/)?"[\x21\x23-\x7e]*")*)$/;

/**
 * `--if-match`: `*`, ETags as `get --etag` prints them (`"42"`, a comma-separated list), or a bare
 * version (`42`, sent as `"42"`). Anything else is wrong usage: it could not be sent as a header.
 */
function parseEtags(text: string): string {
  if (/^[0-9]{1,19}$/.test(text)) return `"${text}"`;
  if (ETAGS.test(text.trim())) return text.trim();
  throw new UsageError(`--if-match must be *, an ETag such as "42", or a version ("${text}").`);
}

/** `text` as one word of a shell command line (quoted when it needs to be). */
function shellWord(text: string): string {
  return /^[A-Za-z0-9_.,:/@%+=-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

function usageFailure(message: string): number {
  report(`plants: ${message}`);
  process.stderr.write('Run "plants --help" for usage.\n');
  return EXIT.usage;
}

function callFailure(error: PlantStoreError, json: boolean): number {
  if (error.status === 0) {
    report(`plants: ${error.message}`);
    return EXIT.unreachable;
  }
  const body = { error: error.error ?? error.status, message: error.serverMessage ?? error.message };
  // Without an Error body, the message already says the call and the status.
  const line = error.serverMessage === undefined ? error.message : `${body.error} ${body.message}`;
  report(json ? stringifyJson(body) : `plants: ${line}`);
  return EXIT.failed;
}

process.exitCode = await main(process.argv.slice(2));
