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
import { newTokenSecret } from './auth.ts';
import { MIN_API_TOKEN_LENGTH } from './config.ts';

/**
 * The bearer token of a service started without API_TOKENS: read from `file`, or on first start
 * generated and saved there. The file is private (0600, in a 0700 directory when this creates it)
 * and appears whole or not at all: the token is written to a temporary file beside it, fsync'd,
 * linked into place and the directory fsync'd. A link, unlike a rename, never replaces a token
 * another process saved first; that one is used instead. The token is never logged.
 */
export function generatedToken(file: string): string {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const saved = readSaved(file);
  if (saved !== undefined) return saved;
  const token = newTokenSecret();
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${token}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readSaved(file)!;
  } finally {
    unlinkSync(temporary);
  }
  const dir = openSync(dirname(file), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  process.stderr.write(`No API_TOKENS set: generated a bearer token and saved it to ${file}\n`);
  return token;
}

/** The saved token, its file made private if it was not; `undefined` when there is no file. */
function readSaved(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  chmodSync(file, 0o600);
  const token = text.trim();
  if (token.length < MIN_API_TOKEN_LENGTH || /\s/.test(token)) {
    throw new Error(`${file} holds no usable token: delete it to have a new one generated`);
  }
  return token;
}
