import { parseArgs } from 'node:util';
import { PLANT_EVENT_TYPES, type PlantEventType } from '@plant-store/schema';
import { FIELD_OPTIONS } from './cli-fields.ts';
import { visible } from './terminal-text.ts';

/** The exit statuses scripts can rely on. */
export const EXIT = {
  /** The command did what it says. */
  ok: 0,
  /** The server answered with an error (its `Error` body is printed), or with something unusable. */
  failed: 1,
  /** The command line is wrong (nothing was sent). */
  usage: 2,
  /** No answer: the server could not be reached, or did not answer within the timeout. */
  unreachable: 3,
} as const;

export const TIMEOUT_MS = 30_000;

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  id: { type: 'string' },
  ...FIELD_OPTIONS,
  'if-match': { type: 'string' },
  'name-prefix': { type: 'string' },
  etag: { type: 'boolean' },
  'on-conflict': { type: 'string' },
  events: { type: 'string', multiple: true },
  'clear-description': { type: 'boolean' },
  limit: { type: 'string' },
  after: { type: 'string' },
  before: { type: 'string' },
  all: { type: 'boolean' },
  'max-plants': { type: 'string' },
  format: { type: 'string' },
  description: { type: 'string' },
  type: { type: 'string', multiple: true },
} as const;

/** The options that take a list, and so may be repeated. */
const LISTS = new Set(
  Object.keys(OPTIONS).filter((name) => 'multiple' in OPTIONS[name as keyof typeof OPTIONS]),
);

/**
 * The command line's options and operands. Options that take a list (`--type`, `--events`) may be
 * repeated; any other given twice is wrong usage (node:util alone would keep only the last).
 */
export function parse(args: string[]) {
  const { values, positionals, tokens } = parseArgs({
    args,
    options: OPTIONS,
    allowPositionals: true,
    strict: true,
    tokens: true,
  });
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option' || LISTS.has(token.name)) continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} takes one value: give it once.`);
    seen.add(token.name);
  }
  return { values, positionals };
}

export type Values = ReturnType<typeof parse>['values'];

/** A wrong command line: printed with a pointer to the help, exit status 2. */
export class UsageError extends Error {}

/** Where a command's result goes: `print` writes one line to stdout, server text in it escaped. */
export type Output = { json: boolean; print(line: string): void };

/** Where the server is and how to be let in, from the command line or the environment. */
export type Connection = { baseUrl: string; token: string };

export type Command = {
  /** The options it takes besides the global ones. */
  options: string[];
  /** How many operands it takes, and what they are when they are missing (default `one id`). */
  operands: number;
  needs?: string;
  /** Resolves to the exit status. */
  run(connection: Connection, values: Values, operands: string[], out: Output): Promise<number>;
};

export function callOptions() {
  return { signal: AbortSignal.timeout(TIMEOUT_MS) };
}

/**
 * Writes one line to stderr, server text in it escaped (`visible`): every message the CLI shows
 * goes through here or through `Output.print`.
 */
export function report(line: string): void {
  process.stderr.write(`${visible(line)}\n`);
}

/** Rows (the first one the header) as aligned columns; the columns in `right` are aligned right. */
export function printTable(out: Output, rows: string[][], right: number[] = []): void {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) {
    const cells = row.map((cell, column) =>
      right.includes(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
    );
    out.print(cells.join('  ').trimEnd());
  }
}

/** Event types given on the command line (`--type`, `--events`): each one type or a comma-separated list. */
export function parseEventTypes(given: string[], option: string): PlantEventType[] {
  const types = given.flatMap((text) => text.split(','));
  const unknown = types.find((type) => !(PLANT_EVENT_TYPES as readonly string[]).includes(type));
  if (unknown !== undefined) {
    throw new UsageError(
      `${option} must be ${PLANT_EVENT_TYPES.join(', ')} or a list of them ("${unknown}").`,
    );
  }
  return [...new Set(types as PlantEventType[])];
}
