/**
 * What a webhook secrets key is (WEBHOOK_SECRETS_KEY, or the one generated on SQLite): here, apart
 * from webhooks/secrets.ts, so that config.ts can check one without importing the webhooks.
 */

/** Bytes of a secrets key (AES-256). */
export const SECRETS_KEY_BYTES = 32;

/** Whether `text` is a secrets key: base64 of exactly 32 bytes. */
export function isSecretsKey(text: string): boolean {
  return /^[A-Za-z0-9+/]+={0,2}$/.test(text) && Buffer.from(text, 'base64').length === SECRETS_KEY_BYTES;
}
