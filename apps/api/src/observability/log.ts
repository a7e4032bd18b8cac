import pino, { type DestinationStream, type Logger } from 'pino';
import type { Config } from '../config/config.ts';

/**
 * The process logger: JSON lines on stdout (or on `destination`, where tests keep them), secrets
 * redacted. In development on a terminal (`pnpm dev`), lines are pretty-printed by pino-pretty
 * instead.
 */
export function createLogger(
  config: Pick<Config, 'logLevel' | 'production'>,
  destination?: DestinationStream,
): Logger {
  const options = {
    level: config.logLevel,
    base: { service: 'plant-store-api' },
    redact: ['authorization', 'token', 'secret'],
  };
  if (destination) return pino(options, destination);
  if (!config.production && process.stdout.isTTY) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true } } });
  }
  // Node opens a pipe on stdout non-blocking when it first makes `process.stdout` (done here): a
  // write to a pipe nobody reads then fails at once and sonic-boom retries it later, where a
  // blocking write would hold one of libuv's threads, which process.exit waits for, forever.
  void process.stdout.fd;
  // Written by libuv (sonic-boom, `sync: false`), at least 4 KiB at a time: a write a line, each
  // handed to libuv's threads, was 16% of a create's CPU in a profile. A quiet server's lines go out
  // within `LOG_WRITE_DELAY_MS`; `flushLog` writes what is left at exit.
  const stdout = pino.destination({
    dest: 1,
    sync: false,
    minLength: 4096,
    periodicFlush: LOG_WRITE_DELAY_MS,
    maxLength: LOG_BUFFER_BYTES,
  });
  const log = pino(options, stdout);
  const output = { stream: stdout, dropped: 0 };
  outputs.set(log, output);
  // Said at most once a second, once stdout takes lines again (a report it drops is tried again).
  let unreported = 0;
  let reporting: NodeJS.Timeout | undefined;
  const report = () => {
    reporting = undefined;
    const before = output.dropped;
    log.warn({ dropped: unreported, droppedSinceStart: before }, 'log lines dropped: stdout was not read');
    if (output.dropped === before) unreported = 0;
  };
  // What is dropped is a write's lines, together.
  stdout.on('drop', (lines: string) => {
    const count = lines.split('\n').length - 1;
    output.dropped += count;
    unreported += count;
    if (reporting === undefined) reporting = setTimeout(report, 1000).unref();
  });
  return log;
}

/**
 * Most bytes of log lines kept waiting for stdout (about 30,000 lines): when whatever reads it
 * falls behind or stops, further lines are dropped and counted (`droppedLogLines`) rather than
 * kept until the process runs out of memory.
 */
export const LOG_BUFFER_BYTES = 8 * 1024 * 1024;

/** Longest a log line waits in the process before it is written. */
export const LOG_WRITE_DELAY_MS = 10;

type Destination = ReturnType<typeof pino.destination>;

/** The stdout of each logger that writes there, and the lines it dropped: each logger its own. */
const outputs = new WeakMap<Logger, { stream: Destination; dropped: number }>();

/** Log lines `log` dropped since it was made because stdout was not read (see `LOG_BUFFER_BYTES`). */
export function droppedLogLines(log: Logger): number {
  return outputs.get(log)?.dropped ?? 0;
}

/**
 * Writes out what the logger holds, waiting at most `timeoutMs`: a stdout nobody reads cannot keep
 * the process from exiting. Past the deadline the lines left are given up, including by pino's own
 * flush at exit, which would otherwise block on the full pipe.
 */
export function flushLog(log: Logger, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      const output = outputs.get(log);
      if (output) output.stream.flushSync = () => {};
      resolve();
    }, timeoutMs);
    log.flush(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
