import { fstatSync } from 'node:fs';
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
  // A turn's lines are handed over together (`writePerTurn`), and written at once: to a file on
  // this thread (handing each write to libuv's threads cost more than the write itself, about a
  // tenth of a GET by id on these machines); to a pipe by libuv, where minLength 1 makes flush()
  // wait until the lines are written (with 0 it answers at once).
  const stdout = writePerTurn(
    isRegularFile(1)
      ? pino.destination({ dest: 1, sync: true, maxLength: LOG_BUFFER_BYTES })
      : pino.destination({ dest: 1, sync: false, minLength: 1, maxLength: LOG_BUFFER_BYTES }),
  );
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
  // What is dropped is a turn's lines, together.
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

/** Most bytes of lines a turn gathers before they are handed over (less than sonic-boom's `maxWrite`). */
const TURN_BYTES = 8 * 1024;

type Destination = ReturnType<typeof pino.destination>;

function isRegularFile(fd: number): boolean {
  try {
    return fstatSync(fd).isFile();
  } catch {
    return false;
  }
}

/**
 * Gathers the lines of one event-loop turn and hands them to `stream` as one string once the turn
 * is over (or once they reach `TURN_BYTES`): one write for all the requests a turn answered, and no
 * line waits longer. Handed one line at a time, sonic-boom appends each to the string it holds and
 * measures that string's UTF-8 length again: a copy of everything held so far, per line (about 4%
 * of a GET by id's instructions). A flush first hands over what the turn gathered.
 */
function writePerTurn(stream: Destination): Destination {
  let lines: string[] = [];
  let length = 0;
  let closed = false;
  stream.once('close', () => {
    closed = true;
  });
  const write = stream.write.bind(stream);
  const handOver = () => {
    if (lines.length === 0) return;
    const chunk = lines.join('');
    lines = [];
    length = 0;
    // Once the stream has closed, a line has nowhere to go.
    if (!closed) write(chunk);
  };
  stream.write = (line: string) => {
    if (lines.length === 0) setImmediate(handOver);
    lines.push(line);
    length += line.length;
    if (length >= TURN_BYTES) handOver();
    return true;
  };
  const { flush, flushSync } = stream;
  stream.flush = (callback) => {
    handOver();
    flush.call(stream, callback);
  };
  stream.flushSync = () => {
    handOver();
    flushSync.call(stream);
  };
  return stream;
}

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
