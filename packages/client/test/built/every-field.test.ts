import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiProcess } from '@plant-store/api/testing';
import { testStores } from '@plant-store/api/testing/stores';
import {
  PLANT_FIELD_NAMES,
  PLANT_FIELDS,
  type PlantEvent,
  type PlantFieldName,
  parseJson,
  stringifyJson,
} from '@plant-store/schema';
import { parse as parseCsv } from 'csv-parse/sync';
import { stringify as stringifyCsv } from 'csv-stringify/sync';
import { afterAll, describe, expect, it } from 'vitest';
import { createRestClient, createTrpcClient } from '../../src/index.ts';
import { collect, waitFor } from '../support/events.ts';
import { runPlants } from '../support/plants-cli.ts';
import { startReceiver } from '../support/receiver.ts';

/**
 * Every field of `PLANT_FIELDS` goes through every path a plant takes, on both stores: so a new
 * field that one path drops fails here, whatever its name. The values are the field's name and a
 * step (each step gives every field a new value), with what CSV, JSON and terminals escape.
 */
const TOKEN = 'plant-store-test-token';
const fields = (step: string) =>
  Object.fromEntries(
    PLANT_FIELD_NAMES.map((name) => [name, `${name} ${step}: "Fougère", 🌿\u00e9;`]),
  ) as Record<PlantFieldName, string>;
const options = (step: string) => PLANT_FIELD_NAMES.flatMap((name) => [`--${name}`, fields(step)[name]]);

const dir = mkdtempSync(join(tmpdir(), 'plants-every-field-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(testStores())('every plant field through every path ($name)', (store) => {
  it('keeps every field: CLI --json, REST, tRPC, batch sender, import, export, events, webhooks, rows', async () => {
    const instance = await store.setup();
    const hook = await startReceiver();
    const api = await startApiProcess({
      token: TOKEN,
      env: {
        ...instance.env,
        WEBHOOK_URLS: `${hook.url}/created`,
        WEBHOOK_SECRET: 'whsec_'.concat(randomBytes(24).toString('base64')),
        WEBHOOK_ALLOW_PRIVATE_URLS: '1',
        WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
        WEBHOOK_POLL_INTERVAL_MS: '50',
      },
    });
    try {
      const rest = createRestClient({ baseUrl: api.url, token: TOKEN });
      const trpc = createTrpcClient({ baseUrl: api.url, token: TOKEN });
      await rest.endpoints.create({
        url: `${hook.url}/endpoint`,
        events: ['plant.created', 'plant.updated'],
      });
      const plants = async (args: string[]) => {
        const run = await runPlants(['--json', ...args], { PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN });
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        return run.stdout;
      };
      const file = (name: string, text: string) => {
        const path = join(dir, `${store.name}-${name}`);
        writeFileSync(path, text);
        return path;
      };

      // One at a time, through the CLI (REST): create, update (PATCH), get, each printed with --json.
      expect(parseJson(await plants(['create', '--id', '1', ...options('a')]))).toMatchObject({
        id: 1n,
        ...fields('a'),
      });
      expect(parseJson(await plants(['update', '1', ...options('b')]))).toMatchObject({
        id: 1n,
        ...fields('b'),
      });
      expect(parseJson(await plants(['get', '1']))).toMatchObject({ id: 1n, ...fields('b') });

      // Imports through the tRPC batch sender: creates, and (--on-conflict update) whole replacements.
      const ndjson = [
        { id: 2n, ...fields('a') },
        { id: 1n, ...fields('c') },
      ]
        .map((p) => stringifyJson(p))
        .join('\n');
      const csv = stringifyCsv([
        ['id', ...PLANT_FIELD_NAMES],
        ['3', ...PLANT_FIELD_NAMES.map((name) => fields('a')[name])],
        ['2', ...PLANT_FIELD_NAMES.map((name) => fields('b')[name])],
      ]);
      const summary = { created: 1n, updated: 1n, present: 0n, invalid: [], failed: [] };
      for (const path of [file('plants.ndjson', ndjson), file('plants.csv', csv)])
        expect(parseJson(await plants(['import', path, '--on-conflict', 'update']))).toStrictEqual(summary);

      const expected = [
        { id: 1n, ...fields('c') },
        { id: 2n, ...fields('b') },
        { id: 3n, ...fields('a') },
      ];
      const withVersion = expected.map((plant) => ({ ...plant, version: expect.any(BigInt) }));
      // Reads: REST and tRPC pages, REST and tRPC gets, the CLI's list --json.
      expect((await rest.listPlants()).plants).toStrictEqual(withVersion);
      expect((await trpc.plants.list.query({})).plants).toStrictEqual(withVersion);
      for (const plant of expected) {
        expect(await rest.getPlant(plant.id)).toMatchObject(plant);
        expect(await trpc.plants.get.query({ id: plant.id })).toStrictEqual({
          ...plant,
          version: expect.any(BigInt),
        });
      }
      expect(parseJson(await plants(['list']))).toStrictEqual({ plants: withVersion, next: null });

      // Exports, both formats.
      const exported = (await plants(['export', '--format', 'ndjson'])).trim().split('\n').map(parseJson);
      expect(exported).toStrictEqual(expected);
      const records = parseCsv(await plants(['export', '--format', 'csv']), { columns: true }) as object[];
      expect(records).toStrictEqual(expected.map(({ id, ...rest }) => ({ id: String(id), ...rest })));

      // Events, as both streams send them: every field of each created and updated plant.
      const changes = [
        ['plant.created', 1n, 'a'],
        ['plant.updated', 1n, 'b'],
        ['plant.created', 2n, 'a'],
        ['plant.updated', 1n, 'c'],
        ['plant.created', 3n, 'a'],
        ['plant.updated', 2n, 'b'],
      ] as const;
      const eventOf = ([type, id, step]: (typeof changes)[number]) => ({
        type,
        plant: { id, ...fields(step), version: expect.any(BigInt) },
        ...(type === 'plant.updated' && { changed: PLANT_FIELD_NAMES }),
      });
      const stop = new AbortController();
      const sse = collect(rest.events({ after: 0n, signal: stop.signal }), () => stop.abort());
      const pushed: PlantEvent[] = [];
      const errors: unknown[] = [];
      const subscription = trpc.plants.events.subscribe(
        { after: 0n },
        { onData: ({ data }) => pushed.push(data), onError: (error) => errors.push(error) },
      );
      await waitFor(() => pushed.length >= changes.length || errors.length > 0, {
        timeoutMs: 15_000,
        failure: () => `tRPC pushed ${pushed.length} of ${changes.length} events`,
      });
      expect(errors).toStrictEqual([]);
      for (const got of [await sse.until(changes.length), pushed.slice(0, changes.length)])
        expect(
          got.map(({ type, plant, ...rest }) => ({
            type,
            plant,
            ...('changed' in rest && { changed: rest.changed }),
          })),
        ).toStrictEqual(changes.map(eventOf));
      subscription.unsubscribe();
      await sse.stop();

      // Webhooks: the new-plant webhook (WEBHOOK_URLS) gets each NewPlant; the endpoint creates and updates.
      const received = await hook.until(3 + changes.length);
      // Each receiver's deliveries may come in any order: every one expected, and no other.
      const bodies = (path: string, expected: object[]) => {
        const got = received.filter((r) => r.path === path).map((r) => parseJson(r.body));
        expect(got).toHaveLength(expected.length);
        expect(got).toEqual(expect.arrayContaining(expected));
      };
      bodies(
        '/created',
        expected.map(({ id }) => ({ id, ...fields('a') })),
      );
      bodies(
        '/endpoint',
        changes.map(([type, id, step]) =>
          type === 'plant.created'
            ? { id, ...fields(step) }
            : { id, ...fields(step), version: expect.any(BigInt), changed: PLANT_FIELD_NAMES },
        ),
      );

      // What the store holds: a column per field, in plants and in the event log.
      const columns = (plant: Record<PlantFieldName, string>) =>
        Object.fromEntries(PLANT_FIELD_NAMES.map((name) => [PLANT_FIELDS[name].column, plant[name]]));
      expect(await instance.rows('SELECT * FROM plants ORDER BY id')).toMatchObject(
        expected.map((plant) => columns(plant)),
      );
      expect(await instance.rows('SELECT * FROM plant_events ORDER BY id')).toMatchObject(
        changes.map(([, , step]) => columns(fields(step))),
      );
    } finally {
      await api.stop();
      api.cleanup();
      await hook.close();
      await instance.teardown();
    }
  }, 90_000);
});
