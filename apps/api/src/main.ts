import type { Logger } from 'pino';
import { describeCauses } from './causes.ts';
import { runCommand, USAGE, UsageError } from './admin/commands.ts';
import { type Config, ConfigError, loadConfig } from './config/config.ts';
import { createLogger, flushLog } from './observability/log.ts';
import { type RunningServer, startServer } from './server.ts';
import { openStore } from './store/open-store.ts';
import type { Tracing } from './tracing/tracer.ts';

/**
 * After the store fails for good, how long the process goes on answering (503 for anything that
 * needs the store, `/readyz` included) before it closes its connections and exits 1: load balancers
 * and clients get a clean 503 rather than a reset, and the supervisor restarts it soon after.
 */
const FATAL_DRAIN_MS = 2_000;

/** How long the last log lines may take to reach stdout before the process exits without them. */
const LOG_FLUSH_MS = 2_000;

/** After a fatal failure, how long the shutdown may take before the process exits regardless. */
const FATAL_EXIT_DEADLINE_MS = 1_000;

/**
 * `main.js` serves the api; `main.js <command>` runs an administrative command and exits (see
 * commands.ts). Exit codes: 0 done, 1 failed (e.g. the store is unreachable), 2 bad configuration
 * or usage.
 */
async function main(args: string[]): Promise<number | undefined> {
  // Help needs no configuration: it works before the environment is set up.
  if (args[0] === 'help' || args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const config = loadConfig();
  if (args.length > 0) return runCommand(config, args);
  const log = createLogger(config);
  await serveUntilExit(config, log, await startTracing(config, log));
  return undefined;
}

/**
 * The OpenTelemetry SDK when an OTLP endpoint is configured (config.ts), from its own chunk: a
 * service without tracing never loads it.
 */
async function startTracing(config: Config, log: Logger): Promise<Tracing | undefined> {
  if (!config.tracing) return undefined;
  const tracing = (await import('./tracing/sdk.ts')).startTracing(config.tracing, { log });
  const { url, protocol, sampler } = config.tracing;
  // The collector by its origin: its URL may carry credentials.
  log.info({ collector: new URL(url).origin, protocol, sampler: sampler.name }, 'tracing on');
  return tracing;
}

/**
 * Serves the api until SIGTERM/SIGINT, then exits 0 once it has shut down gracefully. If the store
 * fails for good (a failed log sync or COMMIT), logs one `fatal` line, goes on answering (503 for
 * anything that needs the store) for FATAL_DRAIN_MS, then exits 1 so that its supervisor restarts
 * it on what is on disk.
 */
async function serveUntilExit(config: Config, log: Logger, tracing: Tracing | undefined): Promise<void> {
  // With tracing on, each group commit carrying a traced call's write gets its span.
  const store = await openStore(config.store, { commits: tracing?.commits });
  let running: RunningServer;
  try {
    running = await startServer(config, { store, log, tracer: tracing?.tracer });
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  let exitCode = 0;
  const exit = () =>
    void Promise.all([flushTraces(tracing), flushLog(log, LOG_FLUSH_MS)]).then(() => process.exit(exitCode));
  const stop = (signal: string) => void running.close(signal).then(exit);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  void running.failed.then((error) => {
    exitCode = 1;
    log.fatal(
      { reason: describeCauses(error), exitCode, exitInMs: FATAL_DRAIN_MS },
      'store failed: refusing every request that needs it, exiting for a restart to recover from disk',
    );
    setTimeout(() => {
      void running.close('store failure', 0).then(exit);
      // Whatever else might keep the drain waiting, the process exits.
      setTimeout(exit, FATAL_EXIT_DEADLINE_MS);
    }, FATAL_DRAIN_MS);
  });
}

/** Sends the spans still batched, waiting at most LOG_FLUSH_MS: a collector that is down cannot hold the exit. */
function flushTraces(tracing: Tracing | undefined): Promise<void> {
  if (!tracing) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, LOG_FLUSH_MS);
    void tracing
      .shutdown()
      .catch(() => {})
      .finally(() => {
        clearTimeout(timer);
        resolve();
      });
  });
}

try {
  const code = await main(process.argv.slice(2));
  if (code !== undefined) process.exit(code);
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message}\n${USAGE}\n`);
    process.exit(2);
  }
  // Typically the store: unreachable, or a migration failed. A supervisor restarts the process.
  process.stderr.write(`Could not start: ${describeCauses(error)}\n`);
  process.exit(1);
}
