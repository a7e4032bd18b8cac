// The committed contract: apps/api/openapi.json, generated from the source, and the breaking-change
// check against the last released document in apps/api/openapi/released/.
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { openApiDocument } from '../src/http/openapi.ts';
import { restRoutes } from '../src/http/rest.ts';

export const COMMITTED_PATH = new URL('../openapi.json', import.meta.url).pathname;
export const RELEASED_DIR = new URL('../openapi/released/', import.meta.url).pathname;
/** The `servers` URL of the committed document: where `pnpm start` listens by default. */
export const DOCUMENT_SERVER_URL = 'http://127.0.0.1:3000';
/** What to run, at the repository root, to regenerate apps/api/openapi.json. */
export const REGENERATE_COMMAND = 'npx -y pnpm@10.34.8 openapi';

/** The document as the committed file holds it: two-space indented JSON and a final newline. */
export function formatDocument(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

/** The document built from the source, exactly as the server builds it (app.ts), for `DOCUMENT_SERVER_URL`. */
export function generatedDocument(): string {
  return formatDocument(openApiDocument(restRoutes(), DOCUMENT_SERVER_URL));
}

/** The released document with the highest version in `dir` (files named `<semver>.json`). */
export function lastReleased(dir = RELEASED_DIR): { version: string; path: string } {
  const versions = readdirSync(dir)
    .filter((name) => /^\d+\.\d+\.\d+\.json$/.test(name))
    .map((name) => name.slice(0, -'.json'.length))
    .sort((a, b) => compareVersions(a, b));
  const version = versions.at(-1);
  if (version === undefined) throw new Error(`No released document (<version>.json) in ${dir}`);
  return { version, path: `${dir}${version}.json` };
}

type Version = [number, number, number];

function parseVersion(version: string): Version | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

function compareVersions(a: string, b: string): number {
  const [x, y] = [parseVersion(a)!, parseVersion(b)!];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** One change, as Redocly's `diff --format json` reports it (the fields used here). */
type Change = {
  path: string;
  typeName: string;
  kind: 'added' | 'removed' | 'modified';
  impact: 'major' | 'minor' | 'patch';
  verdicts: { ruleId: string; impact: string; message: string }[];
};
type Report = { infoVersions: { base: string; revision: string }; changes: Change[] };

/** One change to the document, as the check rates it. */
export type RatedChange = { where: string; breaking: boolean; what: string };

export type CheckResult = {
  released: string;
  current: string;
  /** Every change, in Redocly's order: where, whether it breaks a client of the released document, and what. */
  changes: RatedChange[];
  /** One line per breaking change: where, and what. */
  breaking: string[];
  /** Changes that break nothing (additions, descriptions), counted. */
  compatible: number;
  /** Empty when the check passes; else why it fails and what to do. */
  problems: string[];
};

const REDOCLY = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');
const DIFF_OPTIONS = ['--format', 'json', '--fail-on', 'none', '--lint-config', 'off'];
const run = promisify(execFile);

/** Nodes whose removal from a webhook breaks subscribers, which Redocly rates as a patch there. */
const WEBHOOK_PARTS = new Set(['Operation', 'Parameter', 'Schema', 'Response', 'MediaType', 'Header']);

/**
 * Compares `currentPath` with the released document at `releasedPath` with Redocly's `diff`, which
 * rates each change by the semver bump it demands, reading requests and responses in their
 * direction (a narrower request, or a wider response, is breaking). A breaking (major) change
 * fails unless `info.version` was raised to a new major version; additions and wording changes
 * never fail.
 */
export async function checkBreakingChanges(releasedPath: string, currentPath: string): Promise<CheckResult> {
  const { stdout } = await run(
    process.execPath,
    [REDOCLY, 'diff', releasedPath, currentPath, ...DIFF_OPTIONS],
    {
      env: { REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const report = JSON.parse(stdout) as Report;
  const { base: released, revision: current } = report.infoVersions;
  const breaking: string[] = [];
  const changes: RatedChange[] = [];
  let compatible = 0;
  for (const change of report.changes) {
    const where = decodePointer(change.path);
    const majors = change.verdicts.filter((verdict) => verdict.impact === 'major');
    const plain = `${change.typeName} ${change.kind}.`;
    if (change.impact === 'major') {
      const whats = majors.length > 0 ? majors.map((verdict) => verdict.message) : [plain];
      for (const what of whats) {
        breaking.push(`${where}: ${what}`);
        changes.push({ where, breaking: true, what });
      }
    } else if (
      change.kind === 'removed' &&
      change.path.startsWith('#/webhooks/') &&
      WEBHOOK_PARTS.has(change.typeName)
    ) {
      const what = `${change.typeName} removed from a webhook, which subscribers may rely on.`;
      breaking.push(`${where}: ${what}`);
      changes.push({ where, breaking: true, what });
    } else {
      compatible += 1;
      const what = change.verdicts.map((verdict) => verdict.message).join(' ') || plain;
      changes.push({ where, breaking: false, what });
    }
  }
  const problems: string[] = [];
  const [from, to] = [parseVersion(released), parseVersion(current)];
  if (from === undefined || to === undefined) {
    problems.push(`info.version must be MAJOR.MINOR.PATCH: released ${released}, now ${current}.`);
  } else if (compareVersions(current, released) < 0) {
    problems.push(`info.version went back from ${released} (released) to ${current}.`);
  } else if (breaking.length > 0 && to[0] <= from[0]) {
    problems.push(
      `${breaking.length} breaking change(s) since the released ${released}, but info.version is ${current}:\n` +
        breaking.map((line) => `  - ${line}`).join('\n') +
        `\nUndo them, or raise info.version (apps/api/src/http/openapi.ts) to ${from[0] + 1}.0.0 and ` +
        `regenerate with \`${REGENERATE_COMMAND}\`.`,
    );
  }
  return { released, current, changes, breaking, compatible, problems };
}

/** The report `openapi:check` prints: one line per change, rated, then the totals. */
export function formatChanges(result: CheckResult): string {
  const lines = result.changes.map(
    (change) => `${change.breaking ? 'breaking  ' : 'compatible'} ${change.where}: ${change.what}`,
  );
  const totals =
    `openapi.json ${result.current} against the released ${result.released}: ` +
    `${result.breaking.length} breaking change(s)${result.breaking.length > 0 && result.problems.length === 0 ? ' (allowed by the new major version)' : ''}, ` +
    `${result.compatible} compatible.`;
  return `${[...lines, totals].join('\n')}\n`;
}

/** `#/paths/~1plants/post/…` → `paths › /plants › post › …`, readable in a message. */
function decodePointer(pointer: string): string {
  return pointer
    .replace(/^#\//, '')
    .split('/')
    .map((part) => decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~'))
    .join(' › ');
}
