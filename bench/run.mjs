// `pnpm bench`: the api beside its bare baselines, and the benches of what users run at length.
//
//   node bench/run.mjs [compare|import|backlog|events|growth|scale|soak|cold|profile|all]…   (after `pnpm build`)
//
// Each command is a module in commands/ exporting { name, run(settings) → result, render(result,
// settings) → Markdown lines, targets(result, settings) → [{target, figure, result}] }. This entry
// reads the settings, runs the commands asked for in a fixed order and writes the report:
// BENCH_OUT (bench/results/latest) .json, .md and, with compare, .svg.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, relative } from 'node:path';
import backlog from './commands/backlog.mjs';
import cold from './commands/cold.mjs';
import compare from './commands/compare.mjs';
import events from './commands/events.mjs';
import growth from './commands/growth.mjs';
import importBench from './commands/import.mjs';
import profile from './commands/profile.mjs';
import scale from './commands/scale.mjs';
import soak from './commands/soak.mjs';
import { writeChart } from './lib/chart.mjs';
import { resolveScenarios } from './lib/scenarios.mjs';
import { progress, warn, warnings } from './lib/session.mjs';
import { readCommands, readSettings, UsageError } from './lib/settings.mjs';
import { table } from './lib/stats.mjs';
import { DEFAULT_POSTGRES_URL, postgresAnswers, redact } from './lib/stores.mjs';
import { API_MAIN, CLI_MAIN, installCleanup, ROOT, setPinning } from './lib/system.mjs';
import { checkTrpcBody } from './lib/workload.mjs';

const COMMANDS = [compare, importBench, backlog, events, growth, scale, soak, cold, profile];

let commands;
let settings;
try {
  commands = readCommands(
    process.argv.slice(2),
    COMMANDS.map((c) => c.name),
  );
  settings = readSettings();
  for (const [file, what, needed] of [
    [API_MAIN, 'the api (pnpm build)', true],
    [CLI_MAIN, 'the client (pnpm build)', commands.includes('import')],
  ])
    if (needed && !existsSync(file)) throw new UsageError(`${file} is missing: build ${what} first`);
  if (settings.databaseUrl === 'none') settings.databaseUrl = undefined;
  else if (!settings.databaseUrl && (await postgresAnswers(DEFAULT_POSTGRES_URL)))
    settings.databaseUrl = DEFAULT_POSTGRES_URL;
  else if (!settings.databaseUrl)
    warn(`no PostgreSQL at ${DEFAULT_POSTGRES_URL}: the PostgreSQL parts did not run`);
  settings.scenarios = resolveScenarios(settings);
} catch (error) {
  console.error(error.message);
  process.exit(2);
}
installCleanup(settings.keep);
const pinning = setPinning(process.env);
if (!pinning.enabled) warn(`not pinned to cores (${pinning.why}): server and load share the CPUs`);
if (commands.includes('import') || settings.scenarios.some((name) => name.startsWith('trpc')))
  await checkTrpcBody();

const git = (...args) => {
  try {
    return execFileSync('git', args, { cwd: dirname(API_MAIN), encoding: 'utf8', stdio: 'pipe' }).trim();
  } catch {}
};
const machine = {
  date: new Date().toISOString(),
  cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
  cores: cpus().length,
  memoryGb: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  api: relative(ROOT, API_MAIN),
  // The commit of the checkout the build is in, and whether that checkout has uncommitted changes.
  apiCommit: `${git('rev-parse', '--short', 'HEAD') ?? 'unknown'}${git('status', '--porcelain', '--untracked-files=no') ? ' + changes' : ''}`,
  loadAverageAtStart: loadavg().map((l) => Math.round(l * 100) / 100),
};
if (machine.loadAverageAtStart[0] > 0.5)
  warn(
    `load average ${machine.loadAverageAtStart[0]} at start: other work on this machine makes the figures noisy`,
  );
progress(
  `plant-store bench: ${commands.join(', ')} · ${machine.cpuModel} × ${machine.cores} · Node ${machine.node} · ` +
    `api ${machine.api} at ${machine.apiCommit} · ${pinning.enabled ? `server on CPU ${pinning.serverCpu}, load on CPU ${pinning.loadCpu}` : 'not pinned'}`,
);

const results = {};
const started = performance.now();
for (const command of COMMANDS) {
  if (!commands.includes(command.name)) continue;
  try {
    results[command.name] = await command.run(settings);
  } catch (error) {
    progress(`[${command.name}] FAILED: ${error.stack}`);
    results[command.name] = { error: error.message };
  }
}
machine.loadAverageAtEnd = loadavg().map((l) => Math.round(l * 100) / 100);
machine.seconds = Math.round((performance.now() - started) / 1000);

const ran = COMMANDS.filter((c) => results[c.name]);
const targets = ran.flatMap((c) => (results[c.name].error ? [] : c.targets(results[c.name], settings)));
for (const c of ran) if (results[c.name].error) warn(`${c.name} failed: ${results[c.name].error}`);
const { out, scenarios, databaseUrl } = settings;
const report = {
  machine,
  settings: { ...settings, commands, databaseUrl: databaseUrl && redact(databaseUrl), pinning },
  targets,
  warnings,
  ...results,
};
const markdown = [
  '# Plant store benchmark',
  '',
  `${machine.date} · ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGb} GB · Node ${machine.node} · ` +
    `api ${machine.api} at ${machine.apiCommit} · ${pinning.enabled ? `server on CPU ${pinning.serverCpu}, load on CPU ${pinning.loadCpu}` : `not pinned (${pinning.why})`} · ` +
    `data in ${settings.tmpBase} · load average ${machine.loadAverageAtStart.join(' ')} at start, ${machine.loadAverageAtEnd.join(' ')} at end · ${machine.seconds} s`,
  '',
  ...(targets.length
    ? [
        '## Targets',
        '',
        table(
          ['target', 'figure', 'result'],
          targets.map((t) => [t.target, t.figure, t.result]),
        ),
      ]
    : []),
  ...ran.flatMap((c) => (results[c.name].error ? [] : c.render(results[c.name], settings))),
  ...(warnings.length ? ['## Notes from this run', '', ...warnings.map((w) => `- ${w}`), ''] : []),
  `Scenarios: ${scenarios.join(', ')}. Reproduce: \`node bench/run.mjs ${commands.join(' ')}\` after \`pnpm build\`; knobs in bench/README.md.`,
  '',
].join('\n');
mkdirSync(dirname(out), { recursive: true });
if (results.compare && !results.compare.error) writeChart(report, `${out}.svg`);
writeFileSync(`${out}.json`, `${JSON.stringify(report, null, 2)}\n`);
writeFileSync(`${out}.md`, markdown);
process.stdout.write(`\n${markdown}`);
progress(`wrote ${out}.json, .md${results.compare ? ' and .svg' : ''}`);
const failed =
  ran.some((c) => results[c.name].error) ||
  targets.some((t) => t.result === 'FAIL' && (settings.strict || t.target.endsWith('(check)')));
process.exitCode = failed ? 1 : 0;
