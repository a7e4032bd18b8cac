import { runCommand, USAGE, UsageError } from './commands.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log.ts';
import { serve } from './serve.ts';
import { describeStore, openStore } from './store/open-store.ts';

/**
 * `main.js` serves the api; `main.js <command>` runs an administrative command and exits (see
 * commands.ts). Exit codes: 0 done, 1 failed (e.g. the store is unreachable), 2 bad configuration
 * or usage.
 */
async function main(args: string[]): Promise<number | undefined> {
  const config = loadConfig();
  if (args.length > 0) return runCommand(config, args);
  const log = createLogger(config);
  const where = describeStore(config.store);
  const store = await openStore(config.store, config.webhooks?.urls);
  await serve(config, store, log, where);
  return undefined;
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
  process.stderr.write(`Could not start: ${causes(error)}\n`);
  process.exit(1);
}

function causes(error: unknown): string {
  const messages: string[] = [];
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    // A refused connection to a dual-stack host is an AggregateError with an empty message.
    messages.push(e.message || String((e as { code?: unknown }).code ?? e.name));
  }
  return messages.join(': ') || String(error);
}
