import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type ApiProcess, startApiProcess } from '@plant-store/api/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const execFileAsync = promisify(execFile);

/** Runs a command; a failure's message carries what the command printed (tsc reports on stdout). */
async function run(file: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  try {
    return await execFileAsync(file, args, options);
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed:\n${stdout ?? ''}${stderr ?? ''}`, { cause: error });
  }
}
const PACKAGE = new URL('../../', import.meta.url).pathname;
const TSC = join(PACKAGE, 'node_modules/.bin/tsc');
const TOKEN = 'pack-test-token-0123456789';
const TYPES_NODE = JSON.parse(readFileSync(join(PACKAGE, 'node_modules/@types/node/package.json'), 'utf8'))
  .version as string;

/** A third party's program: both clients and both entry points, type-checked against the tarball's types. */
const CONSUMER = `import {
  allPlants,
  createRestClient,
  createTrpcClient,
  isPreconditionFailed,
  PlantStoreError,
  type PlantWithId,
} from '@plant-store/client';
import { createRestClient as createRestOnly } from '@plant-store/client/rest';

const [baseUrl = '', token = ''] = process.argv.slice(2);
const rest = createRestClient({ baseUrl, token });
const trpc = createTrpcClient({ baseUrl, token });

const created = await rest.createPlant({ id: 9007199254740993n, name: 'Packed', tag: 'tarball' });
const read: PlantWithId = await rest.getPlant(9007199254740993n);
const stale = await rest.updatePlant(9007199254740993n, { name: 'Stale' }, { expectedVersion: 0n }).then(
  () => 'updated',
  (error: unknown) => isPreconditionFailed(error),
);
const overTrpc = await trpc.plants.create.mutate({ id: 9007199254740995n, name: 'Over tRPC' });
const readOverTrpc = await trpc.plants.get.query({ id: 9007199254740995n });
const page = await createRestOnly({ baseUrl, token }).listPlants({ limit: 1 });
let refused: unknown;
try {
  await createRestOnly({ baseUrl, token }).createPlant({ id: 9007199254740993n, name: 'Again' });
} catch (error) {
  refused = error instanceof PlantStoreError ? [error.status, error.serverMessage] : String(error);
}
// Live events, from the start of the log: the REST iterator (until break), then the subscription.
const overRest: string[] = [];
for await (const event of rest.events({ after: 0n })) {
  overRest.push(\`\${event.type} \${event.plant.id.toString()}\`);
  if (overRest.length === 2) break;
}
const overSubscription = await new Promise<string>((resolve) => {
  const subscription = trpc.plants.events.subscribe({ after: 0n }, {
    onData: ({ data }) => {
      subscription.unsubscribe();
      resolve(\`\${typeof data.plant.id} \${data.plant.id.toString()}\`);
    },
  });
});
const ids = (plants: { id: bigint }[]) => plants.map(({ id }) => id.toString());
console.log(JSON.stringify({
  created: [created.name, created.tag, typeof created.version, created.etag],
  read: [typeof read.id, read.id.toString(), read.name, read.tag, read.version.toString()],
  stale,
  overTrpc,
  readOverTrpc: [typeof readOverTrpc.id, readOverTrpc.id.toString(), readOverTrpc.name],
  page: [ids(page.plants), page.next?.toString()],
  refused,
  events: { overRest, overSubscription },
}));

// Never called: the types are the server's own, not \`any\`.
export function typeChecks(): void {
  // @ts-expect-error ids are bigint, never number
  void rest.createPlant({ id: 1, name: 'Fern' });
  // @ts-expect-error the router has no such procedure
  void trpc.plants.remove;
  // @ts-expect-error tRPC inputs are typed: name is required
  void trpc.plants.create.mutate({ id: 1n });
  // @ts-expect-error versions are bigint too
  void trpc.plants.update.mutate({ id: 1n, expectedVersion: 1 });
  void allPlants(trpc, { tag: 'x' });
}
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    // DOM: @trpc/client's own declarations name RequestInfo, which @types/node lacks.
    lib: ['ES2022', 'DOM'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    types: ['node'],
    strict: true,
    // The published declarations themselves are checked too.
    skipLibCheck: false,
    outDir: 'out',
  },
  files: ['main.ts'],
};

let api: ApiProcess;
let project: string;
beforeAll(async () => {
  api = await startApiProcess({ token: TOKEN });
  project = mkdtempSync(join(tmpdir(), 'plant-store-consumer-'));
});
afterAll(async () => {
  await api?.stop();
  api?.cleanup();
  if (project) rmSync(project, { recursive: true, force: true });
});

/**
 * The environment of a shell outside the workspace: without what pnpm sets for its scripts (package
 * fields, lifecycle, pnpm's own settings), keeping npm settings such as a registry or a proxy.
 */
function plainEnv(): NodeJS.ProcessEnv {
  const pnpmSet =
    /^(npm_package_|npm_lifecycle_|pnpm_)|^npm_(command|execpath|node_execpath|config_user_agent|config_verify_deps_before_run)$/i;
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !pnpmSet.test(key)));
}

describe('the packed client, installed outside the workspace', () => {
  it('installs from its tarball with npm, type-checks and calls the api over REST and tRPC', async () => {
    const tarball = join(project, 'plant-store-client.tgz');
    // dist/ as the build made it (test/support/build.ts): publishing builds it with the same
    // build.mjs (`prepack`), but rebuilding here would empty dist/ under the CLI tests beside this one.
    const { scripts } = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8'));
    expect(scripts.prepack).toBe('node build.mjs');
    await run('pnpm', ['pack', '--config.ignore-scripts=true', '--out', tarball], { cwd: PACKAGE });

    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(TSCONFIG));
    writeFileSync(join(project, 'main.ts'), CONSUMER);
    const env = plainEnv();
    await run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, `@types/node@${TYPES_NODE}`],
      { cwd: project, env },
    );

    const installed = JSON.parse(
      readFileSync(join(project, 'node_modules/@plant-store/client/package.json'), 'utf8'),
    ) as { dependencies: Record<string, string> };
    // Everything it needs comes from the registry: the workspace packages are inside dist/.
    expect(Object.keys(installed.dependencies).sort()).toEqual([
      // The API (a no-op without an SDK) for trace propagation; the rest for tracing the CLI.
      '@opentelemetry/api',
      '@opentelemetry/context-async-hooks',
      '@opentelemetry/core',
      '@opentelemetry/exporter-trace-otlp-http',
      '@opentelemetry/exporter-trace-otlp-proto',
      '@opentelemetry/resources',
      '@opentelemetry/sdk-trace',
      '@trpc/client',
      '@trpc/server',
      'cli-progress',
      'csv-parse',
      'csv-stringify',
      'eventsource',
      'eventsource-parser',
      'lossless-json',
      'oauth4webapi',
      'superjson',
      'zod',
    ]);
    expect(Object.values(installed.dependencies).every((version) => /^\d+\.\d+\.\d+$/.test(version))).toBe(
      true,
    );

    await run(TSC, ['--noEmit', '-p', project], { cwd: project, env });
    await run(TSC, ['-p', project], { cwd: project, env });
    const { stdout } = await run(process.execPath, [join(project, 'out/main.js'), api.url, TOKEN], { env });
    expect(JSON.parse(stdout)).toEqual({
      created: ['Packed', 'tarball', 'bigint', '"1"'],
      read: ['bigint', '9007199254740993', 'Packed', 'tarball', '1'],
      stale: true,
      overTrpc: { name: 'Over tRPC' },
      readOverTrpc: ['bigint', '9007199254740995', 'Over tRPC'],
      page: [['9007199254740993'], '9007199254740993'],
      refused: [409, 'A plant with id 9007199254740993 already exists.'],
      events: {
        overRest: ['plant.created 9007199254740993', 'plant.created 9007199254740995'],
        overSubscription: 'bigint 9007199254740993',
      },
    });

    // The tarball's `plants` command works too.
    const cli = await run(join(project, 'node_modules/.bin/plants'), ['get', '9007199254740995', '--json'], {
      env: { ...env, PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN },
    });
    expect(cli.stdout).toBe('{"id":9007199254740995,"name":"Over tRPC","version":2}\n');
    // …including export, which loads the CSV writer from the tarball's dependencies.
    const exported = await run(join(project, 'node_modules/.bin/plants'), ['export', '--format', 'csv'], {
      env: { ...env, PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN },
    });
    expect(exported.stdout).toBe(
      'id,name,tag\n9007199254740993,Packed,tarball\n9007199254740995,Over tRPC,\n',
    );
  }, 180_000);
});
