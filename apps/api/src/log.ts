import pino, { type Logger } from 'pino';
import type { Config } from './config.ts';

/** The process logger: JSON lines on stdout, secrets redacted. */
export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { service: 'plant-store-api' },
      redact: ['authorization', 'token', 'secret'],
    },
    pino.destination({ dest: 1, sync: false }),
  );
}
