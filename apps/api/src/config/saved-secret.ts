import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

/**
 * A secret the service generates once and keeps in `file`: read from it, or on first start
 * generated and saved there. The file is private (0600, in a 0700 directory when this creates it)
 * and appears whole or not at all: the secret is written to a temporary file beside it, fsync'd,
 * linked into place and the directory fsync'd. A link, unlike a rename, never replaces a secret
 * another process saved first; that one is used instead. `created` (never the secret) goes to
 * stderr when this saved a new one.
 */
export function savedPrivately(
  file: string,
  options: { generate(): string; valid(text: string): boolean; what: string; created?: string },
): string {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const saved = readSaved(file, options);
  if (saved !== undefined) return saved;
  const secret = options.generate();
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${secret}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readSaved(file, options)!;
  } finally {
    unlinkSync(temporary);
  }
  const dir = openSync(dirname(file), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  if (options.created) process.stderr.write(`${options.created}\n`);
  return secret;
}

/** The saved secret, its file made private if it was not; `undefined` when there is no file. */
function readSaved(file: string, { valid, what }: { valid(text: string): boolean; what: string }) {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  chmodSync(file, 0o600);
  const secret = text.trim();
  if (!valid(secret))
    throw new Error(`${file} holds no usable ${what}: delete it to have a new one generated`);
  return secret;
}
