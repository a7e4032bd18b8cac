import {
  INTEGER_LITERAL,
  ListPlantsQuerySchema,
  MAX_LIST_LIMIT,
  type NewPlant,
  type PlantId,
  PlantIdSchema,
  PlantPatchSchema,
  type PlantWithId,
  stringifyJson,
} from '@plant-store/schema';
import { bodyOf, FIELD_HEADINGS, fieldCells, newPlantOf, patchOf } from './cli-fields.ts';
import {
  type Connection,
  callOptions,
  EXIT,
  type Output,
  printTable,
  report,
  UsageError,
  type Values,
} from './cli-support.ts';
import { createRestClient } from './rest.ts';
import { visible } from './terminal-text.ts';

/** The commands on plants one at a time: create, list, get, update, delete. */

/** `list --all` holds every plant to print them: it stops past this many unless --max-plants says. */
export const MAX_LISTED_PLANTS = 100_000;
/** …or past this many characters of fields (a plant's name has no upper bound when read). */
const MAX_LISTED_TEXT = 64 * 1024 * 1024;

export async function create(connection: Connection, values: Values, _operands: string[], out: Output) {
  const client = createRestClient(connection);
  if (values.id === undefined) throw new UsageError('create needs --id <id>.');
  const id = parseId(values.id, '--id');
  const plant = newPlantOf(id, values);
  if (typeof plant === 'string') throw new UsageError(plant);
  showPlants([{ id, ...(await client.createPlant(plant, callOptions())) }], out, 'one');
  return EXIT.ok;
}

export async function update(connection: Connection, values: Values, [text]: string[], out: Output) {
  const id = parseId(text!, 'the id');
  const patch = patchOf(values);
  if (typeof patch === 'string') throw new UsageError(patch);
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

export async function list(connection: Connection, values: Values, _operands: string[], out: Output) {
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
    for (const plant of page.plants) for (const cell of fieldCells(plant)) text += cell.length;
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
        `plants: list --all reads at most ${MAX_LISTED_TEXT} characters of fields, and the server ` +
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

export async function get(connection: Connection, values: Values, [id]: string[], out: Output) {
  if (values.etag && out.json) throw new UsageError('--etag prints the ETag alone: leave out --json.');
  const plant = await createRestClient(connection).getPlant(parseId(id!, 'the id'), callOptions());
  if (values.etag) out.print(plant.etag);
  else showPlants([plant], out, 'one');
  return EXIT.ok;
}

export async function remove(connection: Connection, values: Values, [text]: string[], out: Output) {
  const id = parseId(text!, 'the id');
  await createRestClient(connection).deletePlant(id, conditional(values));
  out.print(out.json ? stringifyJson({ id, deleted: true }) : `Deleted plant ${id}.`);
  return EXIT.ok;
}

export function parseId(text: string, what: string): bigint {
  const parsed = INTEGER_LITERAL.test(text) ? PlantIdSchema.safeParse(BigInt(text)) : undefined;
  if (parsed?.success) return parsed.data;
  throw new UsageError(
    `${what} must be an integer from -9223372036854775808 to 9223372036854775807 ("${text}").`,
  );
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
  const rows = plants.map((plant) => [String(plant.id), ...fieldCells(plant).map(visible)]);
  printTable(out, [['ID', ...FIELD_HEADINGS], ...rows], [0]);
}

/** A plant to show: with its version (which an older api left out of a replayed create). */
type Shown = NewPlant & { version?: bigint };

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
