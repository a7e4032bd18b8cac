import { newTokenSecret } from './tokens.ts';
import { MIN_API_TOKEN_LENGTH } from '../config/env.ts';
import { savedPrivately } from '../config/saved-secret.ts';

/**
 * The bearer token of a service started without API_TOKENS: read from `file`, or on first start
 * generated and saved there (see `savedPrivately`: private, whole, never replacing a token another
 * process saved first). The token is never logged.
 */
export function generatedToken(file: string): string {
  return savedPrivately(file, {
    generate: newTokenSecret,
    valid: (token) => token.length >= MIN_API_TOKEN_LENGTH && !/\s/.test(token),
    what: 'token',
    created: `No API_TOKENS set: generated a bearer token and saved it to ${file}`,
  });
}
