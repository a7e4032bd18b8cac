// apps/api/test/support/hostile-report.ts
import { appendFileSync, mkdirSync } from 'node:fs';

/** One attempt of the hostile-client suite: what it tried, the bound it states, what it saw. */
export type HostileAttempt = { attempt: string; tried: string; bound: string; observed: string };

/** Records an attempt in test-results/hostile-clients.jsonl and on stdout, for CI's log. */
export function reportAttempt(attempt: HostileAttempt): void {
  mkdirSync('test-results', { recursive: true });
  appendFileSync('test-results/hostile-clients.jsonl', `${JSON.stringify(attempt)}\n`);
  process.stdout.write(
    `hostile: ${attempt.attempt}: tried ${attempt.tried}; bound ${attempt.bound}; observed ${attempt.observed}\n`,
  );
}
