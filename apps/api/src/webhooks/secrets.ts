import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { savedPrivately } from '../config/saved-secret.ts';
import { isSecretsKey, SECRETS_KEY_BYTES } from '../config/secrets-key.ts';

/** Standard Webhooks secrets this service generates: `whsec_` and base64 of this many random bytes. */
const SECRET_BYTES = 24;
/** What a sealed secret starts with: the format's version, so another can follow. */
const SEALED_PREFIX = 'v1.';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A new endpoint signing secret, generated here: never chosen by the client. */
export function newEndpointSecret(): string {
  return `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/**
 * Seals and opens endpoint secrets at rest: AES-256-GCM under the secrets key, a random IV per
 * seal, the endpoint's id as associated data (a sealed secret copied to another endpoint's row does
 * not open). The store holds only what `seal` returns: `v1.` and base64url of IV, tag and ciphertext.
 */
export type SecretBox = {
  seal(secret: string, endpointId: string): string;
  /** Throws when `sealed` was not sealed under this key for this endpoint. */
  open(sealed: string, endpointId: string): string;
};

export function secretBox(key: Buffer): SecretBox {
  if (key.length !== SECRETS_KEY_BYTES) throw new Error(`a secrets key has ${SECRETS_KEY_BYTES} bytes`);
  return {
    seal(secret, endpointId) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(endpointId));
      const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
    },
    open(sealed, endpointId) {
      if (!sealed.startsWith(SEALED_PREFIX)) throw new Error('not a sealed secret');
      const bytes = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(endpointId));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([
        decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    },
  };
}

/**
 * The secrets key of an SQLite service started without WEBHOOK_SECRETS_KEY: read from `file`, or
 * on first start generated and saved there, private (0600) and whole, like the generated token.
 */
export function generatedSecretsKey(file: string): Buffer {
  const text = savedPrivately(file, {
    generate: () => randomBytes(SECRETS_KEY_BYTES).toString('base64'),
    valid: isSecretsKey,
    what: 'webhook secrets key',
  });
  return Buffer.from(text, 'base64');
}
