import pino, { type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.ts';

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
  return pino(options, pino.destination({ dest: 1, sync: false }));
}
