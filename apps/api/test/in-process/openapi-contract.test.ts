import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  COMMITTED_PATH,
  checkBreakingChanges,
  DOCUMENT_SERVER_URL,
  formatChanges,
  formatDocument,
  generatedDocument,
  lastReleased,
  REGENERATE_COMMAND,
  RELEASED_DIR,
} from '../../scripts/contract.ts';
import { send } from '../support/http.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';

// biome-ignore lint/suspicious/noExplicitAny: copies of the contract are edited freely below
type Json = Record<string, any>;

const committed = readFileSync(COMMITTED_PATH, 'utf8');
const STALE = `apps/api/openapi.json is not what the server serves: regenerate it with \`${REGENERATE_COMMAND}\` at the repository root, and commit it.`;

let api: RunningApi;
let dir: string;
beforeAll(async () => {
  api = await startInProcess();
  dir = mkdtempSync(join(tmpdir(), 'plant-store-contract-'));
});
afterAll(async () => {
  await api?.stop();
  api?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('apps/api/openapi.json, the committed contract', () => {
  it('is exactly what GET /openapi.json serves (for the default server URL)', async () => {
    const served = await send(`${api.url}/openapi.json`);
    expect(served.status).toBe(200);
    // It names the address this server was configured with (port 0 here); the committed document
    // names the default one. Everything else must be identical.
    const document = served.json as Json;
    expect(document.servers).toHaveLength(1);
    document.servers[0].url = DOCUMENT_SERVER_URL;
    expect(committed, STALE).toBe(formatDocument(document));
  });

  it('is what the generator writes', () => {
    expect(committed, STALE).toBe(generatedDocument());
  });

  it(`breaks nothing since the last released document (${lastReleased().version})`, async () => {
    const result = await checkBreakingChanges(lastReleased().path, COMMITTED_PATH);
    expect(result.problems.join('\n')).toBe('');
  }, 30_000);
});

/** Writes `released` and `current` (edited copies of the committed document) and checks them. */
async function check(edit: (current: Json) => void, editReleased: (released: Json) => void = () => {}) {
  const released = JSON.parse(committed) as Json;
  editReleased(released);
  const current = structuredClone(released);
  edit(current);
  const name = Math.random().toString(36).slice(2);
  writeFileSync(join(dir, `${name}-released.json`), formatDocument(released));
  writeFileSync(join(dir, `${name}-current.json`), formatDocument(current));
  return checkBreakingChanges(join(dir, `${name}-released.json`), join(dir, `${name}-current.json`));
}

const withTagEnum = (doc: Json) => {
  doc.components.schemas.NewPlant.properties.tag.enum = ['aroid', 'fern', 'herb'];
};

describe('the breaking-change check (Redocly diff against the last released document)', () => {
  it('fails on a deliberately removed property, naming it and saying what to do', async () => {
    const result = await check((doc) => {
      delete doc.components.schemas.Plant.properties.tag;
    });
    expect(result.problems).toStrictEqual([
      '1 breaking change(s) since the released 1.0.0, but info.version is 1.0.0:\n' +
        '  - paths › /plants › post › responses › 200 › content › application/json › schema › properties › tag: ' +
        'Property `tag` of `Plant` was removed.\n' +
        'Undo them, or raise info.version (apps/api/src/http/openapi.ts) to 2.0.0 and regenerate with ' +
        `\`${REGENERATE_COMMAND}\`.`,
    ]);
  }, 30_000);

  const breakingKinds: [string, (doc: Json) => void, string, ((doc: Json) => void)?][] = [
    [
      'a removed operation',
      (doc) => delete doc.paths['/plants/{id}'].delete,
      'Operation `DELETE /plants/{id}` was removed.',
    ],
    [
      'a removed parameter',
      (doc) => doc.paths['/plants'].get.parameters.splice(1, 1),
      '`after` query parameter was removed.',
    ],
    [
      'a removed request property',
      (doc) => delete doc.components.schemas.NewPlant.properties.tag,
      'Property `tag` of `NewPlant` was removed.',
    ],
    [
      'a removed enum value',
      (doc) => doc.components.schemas.NewPlant.properties.tag.enum.pop(),
      "Enum of `tag` lost values: 'herb'.",
      withTagEnum,
    ],
    [
      'a newly required request field',
      (doc) => doc.components.schemas.NewPlant.required.push('tag'),
      'Properties of `NewPlant` became required: `tag`.',
    ],
    [
      'a parameter that became required',
      (doc) => {
        doc.paths['/plants'].get.parameters[1].required = true;
      },
      '`after` query parameter became required.',
    ],
    [
      'a narrowed format',
      (doc) => {
        doc.components.schemas.NewPlant.properties.id.format = 'int32';
      },
      "`format` of `id` changed from 'int64' to 'int32'.",
    ],
    [
      'a narrowed type',
      (doc) => {
        doc.paths['/plants'].get.parameters[0].schema.type = 'string';
      },
      "Type narrowed from 'integer' to 'string'.",
    ],
    [
      'a shorter maxLength in a request',
      (doc) => {
        doc.components.schemas.NewPlant.properties.name.maxLength = 50;
      },
      "`maxLength` of `name` changed from '200' to '50'.",
    ],
    [
      'a changed success status',
      (doc) => {
        const responses = doc.paths['/plants/{id}'].delete.responses;
        responses['200'] = responses['204'];
        delete responses['204'];
      },
      'Response `204` became `200`.',
    ],
    [
      'a removed error status',
      (doc) => delete doc.paths['/plants'].post.responses['409'],
      'Response `409` was removed.',
    ],
    [
      'a removed response header',
      (doc) => delete doc.paths['/plants'].get.responses['200'].headers,
      'All headers of response `200` were removed.',
    ],
    [
      'a wider response',
      (doc) => {
        doc.components.schemas.Plant.properties.name.maxLength = 500;
      },
      "`maxLength` of `name` changed from '200' to '500'.",
    ],
    [
      'a removed webhook header',
      (doc) => doc.webhooks['/plant/webhook'].post.parameters.pop(),
      'Parameter removed from a webhook, which subscribers may rely on.',
    ],
  ];
  it.each(breakingKinds)(
    'fails on %s',
    async (_kind, edit, message, editReleased) => {
      const result = await check(edit, editReleased);
      expect(result.breaking).toHaveLength(1);
      expect(result.breaking[0]).toContain(message);
      expect(result.problems).toHaveLength(1);
      expect(result.problems[0]).toContain('raise info.version (apps/api/src/http/openapi.ts) to 2.0.0');
    },
    30_000,
  );

  it('passes additions: an optional header, a new answer, an optional property, a new operation', async () => {
    const result = await check((doc) => {
      const post = doc.paths['/plants'].post;
      // Idempotency-Key and 422 are in the document already: add another header and answer.
      post.parameters = [
        ...(post.parameters ?? []),
        { in: 'header', name: 'Prefer', schema: { type: 'string', maxLength: 255 } },
      ];
      post.responses['429'] = post.responses['409'];
      doc.components.schemas.NewPlant.properties.color = { type: 'string' };
      doc.paths['/plants/{id}'].put = { ...structuredClone(post), operationId: 'replacePlant' };
      doc.info.description = 'Reworded.';
    });
    expect(result).toMatchObject({ breaking: [], problems: [], released: '1.0.0', current: '1.0.0' });
    expect(result.compatible).toBeGreaterThanOrEqual(5);
  }, 30_000);

  it('reports every change, one line each, rated breaking or compatible', async () => {
    const result = await check((doc) => {
      delete doc.paths['/plants'].post.responses['409'];
      doc.components.schemas.NewPlant.properties.color = { type: 'string' };
    });
    const color =
      'paths › /plants › post › requestBody › content › application/json › schema › properties › color';
    expect(result.changes).toStrictEqual([
      { where: color, breaking: false, what: 'Schema added.' },
      {
        where: 'paths › /plants › post › responses › 409',
        breaking: true,
        what: 'Response `409` was removed.',
      },
    ]);
    expect(formatChanges(result).split('\n')).toStrictEqual([
      `compatible ${color}: Schema added.`,
      'breaking   paths › /plants › post › responses › 409: Response `409` was removed.',
      'openapi.json 1.0.0 against the released 1.0.0: 1 breaking change(s), 1 compatible.',
      '',
    ]);
  }, 30_000);

  it('passes a breaking change once info.version is raised to the next major, not a minor', async () => {
    const removeTag = (version: string) => (doc: Json) => {
      delete doc.components.schemas.Plant.properties.tag;
      doc.info.version = version;
    };
    const major = await check(removeTag('2.0.0'));
    expect(major.problems).toStrictEqual([]);
    expect(major.breaking).toHaveLength(1);
    const minor = await check(removeTag('1.1.0'));
    expect(minor.problems[0]).toMatch(
      /^1 breaking change\(s\) since the released 1\.0\.0, but info\.version is 1\.1\.0:/,
    );
  }, 30_000);

  it('fails when info.version goes back', async () => {
    const result = await check(
      (doc) => {
        doc.info.version = '1.0.0';
      },
      (doc) => {
        doc.info.version = '1.2.0';
      },
    );
    expect(result.problems).toStrictEqual(['info.version went back from 1.2.0 (released) to 1.0.0.']);
  }, 30_000);

  it('compares with the highest released version', () => {
    const released = join(dir, 'released/');
    mkdirSync(released);
    for (const version of ['1.0.0', '1.10.0', '1.9.3'])
      writeFileSync(join(released, `${version}.json`), '{}');
    expect(lastReleased(released)).toStrictEqual({ version: '1.10.0', path: join(released, '1.10.0.json') });
    expect(lastReleased(RELEASED_DIR).version).toBe('1.0.0');
  });
});
