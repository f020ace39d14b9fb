/**
 * Secrets at rest sealed with the deployment's secret key (SECRET_KEY_BASE, src/documents/secret-key.ts):
 * the private keys of signing certificates (issue 17: an account's own PKCS#12 and its password, the
 * service's CA and timestamp authority). A copy of the database alone opens none of them.
 *
 * AES-256-GCM (node:crypto) under a key derived from SECRET_KEY_BASE with HKDF-SHA256 (RFC 5869;
 * info names the purpose, so the same secret never keys two things). Sealed bytes:
 * `0x01 (format) ‖ 12-byte random nonce ‖ ciphertext ‖ 16-byte tag`; the tag authenticates the rest,
 * so a changed byte, or another deployment's secret, fails to open instead of giving garbage.
 * Changing SECRET_KEY_BASE therefore makes sealed certificates unusable (docs/signatures.md).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { AppError } from '../errors.ts';

const FORMAT = 0x01;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const INFO = 'signet signing certificates v1';

/** Derived keys by secret: deriving is cheap, but it runs for every bundle opened. */
const keys = new Map<string, Buffer>();

function keyOf(secretKeyBase: string): Buffer {
  let key = keys.get(secretKeyBase);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', secretKeyBase, 'signet', INFO, 32));
    keys.set(secretKeyBase, key);
  }
  return key;
}

/** Seals `plain` (see the module comment for the format). */
export function seal(secretKeyBase: string, plain: Uint8Array): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyOf(secretKeyBase), nonce);
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([Buffer.from([FORMAT]), nonce, body, cipher.getAuthTag()]);
}

/**
 * Opens what {@link seal} made.
 * @param what names the secret in the error
 * @throws AppError UNAVAILABLE when the bytes are not sealed with this secret key (another
 *   SECRET_KEY_BASE, or changed bytes)
 */
export function unseal(secretKeyBase: string, sealed: Uint8Array, what: string): Buffer {
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  try {
    if (bytes.length < 1 + NONCE_BYTES + TAG_BYTES || bytes[0] !== FORMAT) throw new Error('not sealed bytes');
    const nonce = bytes.subarray(1, 1 + NONCE_BYTES);
    const tag = bytes.subarray(bytes.length - TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', keyOf(secretKeyBase), nonce);
    decipher.setAuthTag(tag);
    return Buffer.concat([
      decipher.update(bytes.subarray(1 + NONCE_BYTES, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]);
  } catch (error) {
    throw new AppError(
      'UNAVAILABLE',
      `${what} does not open with this deployment's SECRET_KEY_BASE (sealed with another secret, or changed)`,
      { cause: error },
    );
  }
}

/** A text secret sealed into base64 (the `password` column of sealed rows). */
export function sealText(secretKeyBase: string, text: string): string {
  return seal(secretKeyBase, Buffer.from(text, 'utf8')).toString('base64');
}

/** Opens {@link sealText}'s output. @throws as unseal */
export function unsealText(secretKeyBase: string, sealed: string, what: string): string {
  return unseal(secretKeyBase, Buffer.from(sealed, 'base64'), what).toString('utf8');
}
