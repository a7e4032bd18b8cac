// `pnpm bench`: the api side by side with the baseline (bench/baseline.mjs), plus import, growth, soak and
// cold-start benches. See bench/README.md for what each measures and the environment knobs.
//
//   node bench/run.mjs [compare|import|backlog|events|growth|soak|cold|profile|all]…   (default: all; build the
//   api and, for import, the client first)
//
// Each command is a module in scenarios/; this entry reads the settings, runs the commands asked
// for in a fixed order, and writes the report (bench/results/latest.json and .md).

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeChart } from './lib/chart.mjs';
import { loadAverage, machineInfo } from './lib/machine.mjs';
import { DEFAULT_POSTGRES_URL, postgresAnswers, redact } from './lib/postgres.mjs';
import { renderMarkdown } from './lib/report.mjs';
import { progress, warn, warnings } from './lib/session.mjs';
import { readCommands, readSettings, UsageError } from './lib/settings.mjs';
import {
  API_MAIN,
  CLI_MAIN,
  installCleanup,
  keepTemporaryDirectories,
  pinningPlan,
  setPinning,
} from './lib/system.mjs';
import { targets } from './lib/targets.mjs';
import { checkSuperjsonFormat } from './lib/workload.mjs';
import { backlog } from './scenarios/backlog.mjs';
import { cold } from './scenarios/cold.mjs';
import { compare, resolveScenarios } from './scenarios/compare.mjs';
import { events } from './scenarios/events.mjs';
import { growth } from './scenarios/growth.mjs';
import { importBench } from './scenarios/import.mjs';
import { profile } from './scenarios/profile.mjs';
import { soak } from './scenarios/soak.mjs';

/** The commands, in the order they run whatever order they are given in. */
const BENCHES = { compare, import: importBench, backlog, events, growth, soak, cold, profile };

async function main() {
  let commands;
  let settings;
  try {
    commands = readCommands(process.argv.slice(2));
    settings = readSettings();
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  if (!existsSync(API_MAIN)) {
    console.error(`${API_MAIN} is missing: build the api first (pnpm --filter @plant-store/api build)`);
    process.exit(2);
  }
  if (commands.includes('import') && !existsSync(CLI_MAIN)) {
    console.error(`${CLI_MAIN} is missing: build the client first (pnpm --filter @plant-store/client build)`);
    process.exit(2);
  }
  if (settings.databaseUrl === 'none') settings.databaseUrl = undefined;
  else if (settings.databaseUrl === undefined) {
    if (await postgresAnswers(DEFAULT_POSTGRES_URL)) settings.databaseUrl = DEFAULT_POSTGRES_URL;
    else
      warn(
        `no PostgreSQL at ${DEFAULT_POSTGRES_URL} (set BENCH_DATABASE_URL): the PostgreSQL scenarios did not run`,
      );
  }
  try {
    settings.scenarios = resolveScenarios(settings);
  } catch (error) {
    console.error(error.message);
    process.exit(2);
  }
  installCleanup();
  keepTemporaryDirectories(settings.keep);
  const plan = pinningPlan(process.env);
  setPinning(plan);
  if (!plan.enabled) warn(`not pinned to cores (${plan.why}): server and load generator share the CPUs`);
  if (commands.includes('import') || settings.scenarios.some((name) => name.startsWith('trpc')))
    await checkSuperjsonFormat();

  const machine = machineInfo(settings);
  const [load1] = machine.loadAverageAtStart;
  if (load1 > 0.5)
    warn(`load average was ${load1} at start: other work on this machine makes the figures noisy`);
  progress(
    `plant-store bench: ${commands.join(', ')} · ${machine.cpuModel} × ${machine.cores} · Node ${machine.node} · ` +
      (plan.enabled ? `server on CPU ${plan.serverCpu}, load on CPU ${plan.loadCpu}` : 'not pinned'),
  );

  const results = {};
  const started = performance.now();
  for (const [command, bench] of Object.entries(BENCHES)) {
    if (commands.includes(command)) results[command] = await bench(settings);
  }
  machine.loadAverageAtEnd = loadAverage();
  machine.benchSeconds = Math.round((performance.now() - started) / 1000);

  const report = {
    machine,
    settings: {
      commands,
      connections: settings.connections,
      durationSeconds: settings.duration,
      warmupSeconds: settings.warmup,
      runs: settings.runs,
      batch: settings.batch,
      ids: settings.ids,
      importPlants: settings.importPlants,
      importRuns: settings.importRuns,
      growthIds: settings.growthIds,
      growthSizes: settings.growthSizes,
      soakSeconds: settings.soakSeconds,
      backlogSeconds: settings.backlogSeconds,
      eventStreams: settings.eventStreams,
      eventRate: settings.eventRate,
      eventSeconds: settings.eventSeconds,
      eventSample: settings.eventSample,
      profileSeconds: settings.profileSeconds,
      coldRuns: settings.coldRuns,
      apiLog: settings.apiLog,
      pinning: plan.enabled ? { serverCpu: plan.serverCpu, loadCpu: plan.loadCpu } : { off: plan.why },
      postgres: settings.databaseUrl ? redact(settings.databaseUrl) : null,
    },
    targets: targets(results, settings),
    warnings,
    ...results,
  };
  mkdirSync(dirname(settings.out), { recursive: true });
  if (report.compare) report.chart = writeChart(report, `${settings.out}.svg`);
  const markdown = renderMarkdown(report);
  writeFileSync(`${settings.out}.json`, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(`${settings.out}.md`, markdown);
  process.stdout.write(`\n${markdown}`);
  progress(`\nwrote ${settings.out}.json, .md${report.chart ? ' and .svg' : ''}`);

  const harnessFailed =
    Object.values(results.compare?.summary ?? {}).some((s) => s.failed > 0) ||
    Object.values(results.growth?.summary ?? {}).some((s) => s.failed > 0) ||
    Boolean(results.soak?.error) ||
    Boolean(results.backlog?.error) ||
    (results.import?.summary.failed ?? 0) > 0 ||
    Boolean(results.events?.sqlite?.error || results.events?.postgres?.error) ||
    (results.cold?.failures.length ?? 0) > 0;
  const targetFailed = report.targets.some((t) => t.result === 'FAIL');
  process.exitCode = harnessFailed || (settings.strict && targetFailed) ? 1 : 0;
}

await main();
