import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import {
  EventIdSchema,
  INTEGER_LITERAL,
  ListPlantsQuerySchema,
  MAX_LIST_LIMIT,
  type PlantEvent,
  type PlantId,
  PlantIdSchema,
  type PlantWithId,
  stringifyJson,
} from '@plant-store/schema';
import { PlantStoreError } from './errors.ts';
import { createRestClient, type RestClient } from './rest.ts';

/** The exit statuses scripts can rely on. */
const EXIT = {
  /** The command did what it says. */
  ok: 0,
  /** The server answered with an error (its `Error` body is printed), or with something unusable. */
  failed: 1,
  /** The command line is wrong (nothing was sent). */
  usage: 2,
  /** No answer: the server could not be reached, or did not answer within the timeout. */
  unreachable: 3,
} as const;

const DEFAULT_URL = 'http://127.0.0.1:3000';
const TIMEOUT_MS = 30_000;

const USAGE = `Usage: plants <command> [options]

Commands:
  create --id <id> --name <name> [--tag <tag>]   create a plant
  list [--limit <n>] [--after <id>] [--all]      list plants in id order (--all: every page)
  get <id>                                       show one plant
  delete <id>                                    delete one plant
  watch [--after <event id>]                     print creates and deletes live until Ctrl-C
                                                 (exit 0); reconnects by itself and resumes
                                                 where it left off. --after: start after that
                                                 event id (0: every event the server keeps)

Options:
  --url <url>      the server (default: $PLANTS_URL, else ${DEFAULT_URL})
  --token <token>  the bearer token (default: $PLANTS_TOKEN; prefer the variable: arguments are
                   visible to other users of the machine)
  --json           print JSON (ids as exact integers) instead of a table, for watch one event
                   per line; errors go to stderr as the server's Error body
                   {"error": <status>, "message": "..."}
  -h, --help       show this help
  --version        show the version

Ids are signed 64-bit integers, kept exact. A negative id needs "=" or "--":
  plants create --id=-5 --name Fern    plants get -- -5

Exit status: 0 ok, 1 the server answered with an error, 2 wrong usage (nothing sent),
3 no answer from the server (not reachable, or no answer within ${TIMEOUT_MS / 1000} s);
watch keeps retrying instead, and exits 0 on Ctrl-C (SIGINT) or SIGTERM.
`;

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  id: { type: 'string' },
  name: { type: 'string' },
  tag: { type: 'string' },
  limit: { type: 'string' },
  after: { type: 'string' },
  all: { type: 'boolean' },
} as const;

const parse = (args: string[]) => parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });

type Values = ReturnType<typeof parse>['values'];

const GLOBAL = ['url', 'token', 'json', 'help', 'version'];

/** A wrong command line: printed with a pointer to the help, exit status 2. */
class UsageError extends Error {}

type Output = { json: boolean; print(line: string): void };

type Command = {
  /** The options it takes besides the global ones. */
  options: string[];
  /** How many operands (ids) it takes. */
  operands: number;
  run(client: RestClient, values: Values, operands: string[], out: Output): Promise<void>;
};

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
    if (command === undefined) throw new UsageError('a command is needed.');
    const spec = COMMANDS.get(command);
    if (spec === undefined) throw new UsageError(`unknown command "${command}".`);
    const misplaced = Object.keys(values).filter(
      (key) => !GLOBAL.includes(key) && !spec.options.includes(key),
    );
    if (misplaced.length > 0) throw new UsageError(`${command} takes no --${misplaced[0]}.`);
    if (operands.length !== spec.operands) {
      throw new UsageError(
        spec.operands === 0 ? `${command} takes no operand ("${operands[0]}").` : `${command} needs one id.`,
      );
    }
    const client = connect(values);
    const output: Output = { json, print: (line) => process.stdout.write(`${line}\n`) };
    await spec.run(client, values, operands, output);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) return usageFailure(error.message);
    if (error instanceof PlantStoreError) return callFailure(error, json);
    throw error;
  }
}

async function create(client: RestClient, values: Values, _operands: string[], out: Output): Promise<void> {
  if (values.id === undefined) throw new UsageError('create needs --id <id>.');
  if (values.name === undefined) throw new UsageError('create needs --name <name>.');
  const id = parseId(values.id, '--id');
  const plant = await client.createPlant(
    { id, name: values.name, ...(values.tag !== undefined && { tag: values.tag }) },
    callOptions(),
  );
  showPlants([{ id, ...plant }], out, 'one');
}

async function list(client: RestClient, values: Values, _operands: string[], out: Output): Promise<void> {
  const limit = values.limit === undefined ? undefined : parseLimit(values.limit);
  let after = values.after === undefined ? undefined : parseId(values.after, '--after');
  const plants: PlantWithId[] = [];
  let next: PlantId | undefined;
  do {
    const page = await client.listPlants({ limit, after }, callOptions());
    plants.push(...page.plants);
    next = page.next;
    after = next;
  } while (values.all && next !== undefined);
  if (out.json) {
    out.print(stringifyJson({ plants, next: next ?? null }));
    return;
  }
  showPlants(plants, out, 'many');
  if (next !== undefined)
    process.stderr.write(`More plants follow: plants list --after ${next} (or --all)\n`);
}

async function get(client: RestClient, _values: Values, [id]: string[], out: Output): Promise<void> {
  showPlants([await client.getPlant(parseId(id!, 'the id'), callOptions())], out, 'one');
}

async function remove(client: RestClient, _values: Values, [text]: string[], out: Output): Promise<void> {
  const id = parseId(text!, 'the id');
  await client.deletePlant(id, callOptions());
  out.print(out.json ? stringifyJson({ id, deleted: true }) : `Deleted plant ${id}.`);
}

async function watch(client: RestClient, values: Values, _operands: string[], out: Output): Promise<void> {
  const after = values.after === undefined ? undefined : parseEventId(values.after);
  const stop = new AbortController();
  const end = () => stop.abort();
  process.once('SIGINT', end);
  process.once('SIGTERM', end);
  if (!out.json) out.print(eventRow(['TIME', 'EVENT', 'PLANT', 'NAME', 'TAG']));
  try {
    const events = client.events({
      after,
      signal: stop.signal,
      onReconnect: ({ error, delayMs }) =>
        process.stderr.write(
          `plants: ${error.serverMessage ?? failureDetail(error)}; reconnecting in ${delayMs / 1000} s\n`,
        ),
    });
    for await (const event of events) out.print(out.json ? stringifyJson(event) : eventLine(event));
  } finally {
    process.off('SIGINT', end);
    process.off('SIGTERM', end);
  }
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
  ['list', { options: ['limit', 'after', 'all'], operands: 0, run: list }],
  ['get', { options: [], operands: 1, run: get }],
  ['delete', { options: [], operands: 1, run: remove }],
  ['watch', { options: ['after'], operands: 0, run: watch }],
]);

function connect(values: Values): RestClient {
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
  const token = values.token ?? process.env.PLANTS_TOKEN;
  if (token === undefined || token === '') {
    throw new UsageError('a bearer token is needed: set PLANTS_TOKEN (or pass --token).');
  }
  return createRestClient({ baseUrl, token });
}

function callOptions() {
  return { signal: AbortSignal.timeout(TIMEOUT_MS) };
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

function parseLimit(text: string): number {
  const parsed = /^[0-9]{1,9}$/.test(text)
    ? ListPlantsQuerySchema.shape.limit.safeParse(Number(text))
    : undefined;
  if (parsed?.success) return parsed.data;
  throw new UsageError(`--limit must be an integer from 1 to ${MAX_LIST_LIMIT} ("${text}").`);
}

/** Plants as JSON (one object, or an array) or as a table with one row each. */
function showPlants(plants: PlantWithId[], out: Output, shape: 'one' | 'many'): void {
  if (out.json) {
    out.print(stringifyJson(shape === 'one' ? plants[0] : plants));
    return;
  }
  if (plants.length === 0) {
    out.print('No plants.');
    return;
  }
  const rows = [
    ['ID', 'NAME', 'TAG'],
    ...plants.map((p) => [String(p.id), visible(p.name), visible(p.tag ?? '')]),
  ];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) {
    out.print(
      row
        .map((cell, column) => (column === 0 ? cell.padStart(widths[0]!) : cell.padEnd(widths[column]!)))
        .join('  ')
        .trimEnd(),
    );
  }
}

/** Control characters would break the table (or the terminal): shown escaped. */
function visible(text: string): string {
  return text.replace(/\p{Cc}/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function usageFailure(message: string): number {
  process.stderr.write(`plants: ${message}\nRun "plants --help" for usage.\n`);
  return EXIT.usage;
}

function callFailure(error: PlantStoreError, json: boolean): number {
  if (error.status === 0) {
    process.stderr.write(`plants: ${error.message}\n`);
    return EXIT.unreachable;
  }
  const body = { error: error.error ?? error.status, message: error.serverMessage ?? error.message };
  process.stderr.write(json ? `${stringifyJson(body)}\n` : `plants: ${body.error} ${body.message}\n`);
  return EXIT.failed;
}

process.exitCode = await main(process.argv.slice(2));
