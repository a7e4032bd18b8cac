import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import {
  INTEGER_LITERAL,
  type NewPlant,
  NewPlantSchema,
  PLANT_FIELD_NAMES,
  PLANT_FIELDS,
  type PlantFieldName,
  parseJson,
  plantFieldsOf,
  stringifyJson,
} from '@plant-store/schema';
import { parse as parseCsv } from 'csv-parse';
import { stringify as stringifyCsv } from 'csv-stringify/sync';
import { visible } from './terminal-text.ts';

/** The file formats of `plants import` and `plants export`. */
export const FORMATS = ['ndjson', 'csv'] as const;
export type Format = (typeof FORMATS)[number];

/** One record of a file: a plant to create, or why its line is not one. */
export type Entry = { line: number } & ({ plant: NewPlant } | { problem: string });

/** A file that cannot be read on (a CSV quote left open, a header without `id`). */
export class PlantFileError extends Error {}

/** A file's columns (CSV) or members (NDJSON): the id and every field of `PLANT_FIELDS`. */
const COLUMNS: string[] = ['id', ...PLANT_FIELD_NAMES];
const REQUIRED = COLUMNS.filter((name) => name === 'id' || PLANT_FIELDS[name as PlantFieldName].required);
const OPTIONAL = COLUMNS.filter((name) => !REQUIRED.includes(name));

/**
 * The records of an NDJSON or CSV file of plants, validated with `NewPlantSchema`, each with the
 * line it starts on. Ids stay exact: NDJSON is read with the lossless codec, CSV ids are taken as
 * decimal literals. In CSV an empty unquoted `tag` is no tag, and `""` is the empty tag, and the
 * `'` that `formatPlants` puts before a formula-like name or tag is taken off again.
 */
export function readPlants(input: Readable, format: Format): AsyncGenerator<Entry> {
  return format === 'csv' ? readCsv(input) : readNdjson(input);
}

/**
 * How many records `readPlants` will yield for this input (for a progress bar's total), read
 * without checking them: non-blank lines of NDJSON, records after the header of CSV.
 */
export async function countRecords(input: Readable, format: Format): Promise<number> {
  let count = 0;
  if (format === 'ndjson') {
    for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
      if (line.trim() !== '') count++;
    }
    return count;
  }
  try {
    for await (const _ of input.pipe(
      parseCsv({ bom: true, skip_empty_lines: true, relax_column_count: true }),
    )) {
      count++;
    }
  } catch {
    // The import itself reports what is wrong with the file.
  }
  return Math.max(0, count - 1);
}

async function* readNdjson(input: Readable): AsyncGenerator<Entry> {
  let line = 0;
  for await (const text of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    line++;
    const record = line === 1 ? text.replace(/^\uFEFF/, '') : text;
    if (record.trim() === '') continue;
    let json: unknown;
    try {
      json = parseJson(record);
    } catch (error) {
      yield { line, problem: `not JSON (${(error as Error).message})` };
      continue;
    }
    yield { line, ...validate(json) };
  }
}

async function* readCsv(input: Readable): AsyncGenerator<Entry> {
  const parser = input.pipe(
    parseCsv({
      bom: true,
      columns: (header: string[]) => checkHeader(header),
      info: true,
      raw: true,
      skip_empty_lines: true,
      relax_column_count: true,
      cast: (value, context) => {
        if (context.header) return value;
        if (value === '' && !context.quoting) return undefined;
        return context.column === 'id' ? value : fromSpreadsheetText(value);
      },
    }),
  );
  try {
    for await (const { record, info, raw } of parser as AsyncIterable<{
      record: Record<string, unknown>;
      info: { lines: number; columns: unknown[]; error?: { record?: unknown[] } };
      raw: string;
    }>) {
      // `info.lines` is the line a record ends on; a quoted field may span several.
      const line = info.lines - (raw.replace(/^[\r\n]+|[\r\n]+$/g, '').match(/\n/g)?.length ?? 0);
      if (info.error) {
        const fields = info.error.record?.length ?? 0;
        yield {
          line,
          problem: `has ${fields} field${fields === 1 ? '' : 's'}; the header names ${info.columns.length}`,
        };
        continue;
      }
      const { id } = record;
      yield {
        line,
        ...validate(
          typeof id === 'string' && INTEGER_LITERAL.test(id) ? { ...record, id: BigInt(id) } : record,
        ),
      };
    }
  } catch (error) {
    if (error instanceof PlantFileError) throw error;
    throw new PlantFileError(`not CSV: ${(error as Error).message}`);
  }
}

function checkHeader(header: string[]): string[] {
  const names = header.map((name) => name.trim());
  const missing = REQUIRED.filter((name) => !names.includes(name));
  const unknown = names.filter((name) => !COLUMNS.includes(name));
  if (missing.length > 0 || unknown.length > 0 || new Set(names).size !== names.length) {
    throw new PlantFileError(
      `the CSV header must name the columns ${REQUIRED.join(' and ')}, and may name ${OPTIONAL.join(' and ')} ("${header.join(',')}").`,
    );
  }
  return names;
}

function validate(value: unknown): { plant: NewPlant } | { problem: string } {
  const parsed = NewPlantSchema.safeParse(value);
  if (parsed.success) return { plant: parsed.data };
  return {
    problem: parsed.error.issues
      .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')} ${issue.message}` : issue.message))
      .join('; '),
  };
}

/** The text that starts a file of this format (the CSV header). */
export function fileHeader(format: Format): string {
  return format === 'csv' ? `${COLUMNS.join(',')}\n` : '';
}

/**
 * Plants as lines of this format, each its `id`, `name` and `tag` (a catalog: not the version, which
 * a store gives by itself): exact ids; in CSV no tag is an empty field, the empty tag `""`,
 * and a name or tag that a spreadsheet would run as a formula starts with `'` (`spreadsheetText`).
 * NDJSON escapes the characters a terminal obeys (`visible`), as valid JSON of the same values.
 * `forTerminal`: CSV's text escaped the same way (it then no longer reads back exactly).
 */
export function formatPlants(
  plants: readonly NewPlant[],
  format: Format,
  { forTerminal = false } = {},
): string {
  if (format === 'ndjson') {
    return plants
      .map((plant) => `${visible(stringifyJson(Object.assign({ id: plant.id }, plantFieldsOf(plant))))}\n`)
      .join('');
  }
  const text = (value: string) => spreadsheetText(forTerminal ? visible(value) : value);
  return stringifyCsv(
    plants.map((plant) => [
      plant.id,
      ...PLANT_FIELD_NAMES.map((name) => {
        const value = plant[name];
        return value === undefined ? undefined : text(value);
      }),
    ]),
    { cast: { bigint: String }, quoted_match: /^$/ },
  );
}

/**
 * What spreadsheets take for a formula when a cell starts with it (OWASP's CSV injection list, and
 * the full-width forms some normalise), after any number of `'`.
 */
const FORMULA_START = /^'*[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;
const PROTECTED = /^'+[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;

/**
 * Text a spreadsheet shows as text: a leading `'` before what would start a formula. Text that
 * already starts with `'`s before such a character gets one more, so `fromSpreadsheetText` can
 * take exactly one off and give every text back. (csv-stringify's `escape_formulas` does the
 * first part only, so `'=x` would read back as `=x`.)
 */
export function spreadsheetText(text: string): string {
  return FORMULA_START.test(text) ? `'${text}` : text;
}

/** The text `spreadsheetText` was given. */
export function fromSpreadsheetText(text: string): string {
  return PROTECTED.test(text) ? text.slice(1) : text;
}
