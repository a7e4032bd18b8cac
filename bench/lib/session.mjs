// What one invocation of the bench shares: the bearer token of every server it starts, progress
// lines on stderr, and the notes ("anything that looked wrong") that end up in the report.

import { randomBytes } from 'node:crypto';

export const TOKEN = `bench-${randomBytes(12).toString('hex')}`;
export const warnings = [];

export function progress(message) {
  process.stderr.write(`${message}\n`);
}

/** Notes a problem for the report, once. */
export function warn(message) {
  if (!warnings.includes(message)) warnings.push(message);
}
