import { createRequire } from 'node:module';
import { stringifyJson } from '@plant-store/schema';
import { MAX_WAIT_SECONDS } from './backoff.ts';
import { ENDPOINT_COMMANDS } from './cli-endpoints.ts';
import { LoginError, savedToken, signIn } from './cli-login.ts';
import { CREATE_FIELD_OPTIONS, CREATE_USAGE, UPDATE_FIELD_OPTIONS, UPDATE_USAGE } from './cli-fields.ts';
import { create, get, list, MAX_LISTED_PLANTS, remove, update } from './cli-plants.ts';
import { exportAll, importFile, watch } from './cli-streams.ts';
import {
  type Command,
  type Connection,
  EXIT,
  type Output,
  parse,
  report,
  TIMEOUT_MS,
  UsageError,
  type Values,
} from './cli-support.ts';
import { PlantStoreError } from './errors.ts';
import { PlantFileError } from './plant-file.ts';
import { visible } from './terminal-text.ts';

const DEFAULT_URL = 'http://127.0.0.1:3000';
/** A command's usage and what it does, in two columns (the second on its own line if the first is long). */
function usageLine(usage: string, does: string): string {
  const start = `  ${usage}`;
  return start.length < 49 ? `${start.padEnd(49)}${does}` : `${start}\n${' '.repeat(49)}${does}`;
}

const USAGE = `Usage: plants <command> [options]

Commands:
${usageLine(`create --id <id> ${CREATE_USAGE}`, 'create a plant')}
  list [--tag <tag>] [--name-prefix <text>] [--limit <n>] [--after <id>] [--all]
       [--max-plants <n>]                        list plants in id order, only those with that
                                                 tag and whose name starts with that text
                                                 (case-sensitive) when given (--all: every page,
                                                 up to --max-plants, default ${MAX_LISTED_PLANTS},
                                                 else exit 1: export streams any number)
  get <id> [--etag]                              show one plant (--etag: only its ETag, such as
                                                 "42", for --if-match)
  update <id> ${UPDATE_USAGE} [--if-match <etag>]
                                                 change a plant's fields and show it;
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

const COMMANDS = new Map<string, Command>([
  ['create', { options: ['id', ...CREATE_FIELD_OPTIONS], operands: 0, run: create }],
  [
    'list',
    { options: ['limit', 'after', 'all', 'max-plants', 'tag', 'name-prefix'], operands: 0, run: list },
  ],
  ['get', { options: ['etag'], operands: 1, run: get }],
  ['update', { options: [...UPDATE_FIELD_OPTIONS, 'if-match'], operands: 1, run: update }],
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
