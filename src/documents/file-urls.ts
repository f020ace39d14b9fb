/**
 * Signed, expiring file URLs in DocuSeal's shape: `<APP_URL>/file/<signed token>/<url-encoded
 * filename>` (reference/docuseal-behaviour.md §10.7). The filename part is cosmetic; the token
 * alone says which file and until when.
 *
 * Token: `<payload>--<signature>`, where payload is the base64url of the JSON
 * `{"id":"<file uuid>","pur":"blob","exp":<unix seconds>}` and signature the base64url (43
 * characters, no padding) of HMAC-SHA256 over the payload text, keyed with a key derived from the
 * secret (so the secret key base can sign other things without their tokens being interchangeable).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The purpose DocuSeal puts in file tokens; a token for another purpose is refused. */
const PURPOSE = 'blob';
const SIGNATURE_LENGTH = 43;
const SEPARATOR = '--';
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Well above any real token; longer input is refused before any work. */
const MAX_TOKEN_LENGTH = 512;

/** A valid token's file and expiry (ms since the epoch: the token's whole second), or why it is refused. */
export type FileUrlVerification =
  | { ok: true; uuid: string; expiresAt: number }
  | { ok: false; reason: 'expired' | 'invalid' };

export interface FileUrlSigner {
  /**
   * A URL for the file, valid until now + ttl.
   * @param options.now current time in ms since the epoch (default Date.now())
   * @param options.ttlMs lifetime in ms (default: the signer's)
   */
  url(file: { uuid: string; filename: string }, options?: { now?: number; ttlMs?: number }): string;
  /** Just the token (the path segment after /file/). Same options as url(). */
  token(uuid: string, options?: { now?: number; ttlMs?: number }): string;
  /**
   * Checks a token: `invalid` when it is garbled, forged or for another purpose (checked first,
   * so a forged token never learns whether it would have expired), `expired` when its expiry
   * (whole seconds) is at or before `now`.
   * @param now ms since the epoch (default Date.now())
   */
  verify(token: string, now?: number): FileUrlVerification;
}

/**
 * @param options.appUrl public base URL without a trailing slash (config.appUrl)
 * @param options.secret the secret key base (resolveSecretKeyBase)
 * @param options.ttlMs default lifetime of a URL in ms (config.fileUrlTtl; DocuSeal: 40 minutes)
 */
export function createFileUrlSigner(options: { appUrl: string; secret: string; ttlMs: number }): FileUrlSigner {
  const key = createHmac('sha256', options.secret).update('signet file urls v1').digest();
  const base = options.appUrl.replace(/\/+$/, '');
  const sign = (payload: string) => createHmac('sha256', key).update(payload).digest('base64url');

  const token: FileUrlSigner['token'] = (uuid, tokenOptions = {}) => {
    const expiresAt = Math.floor(((tokenOptions.now ?? Date.now()) + (tokenOptions.ttlMs ?? options.ttlMs)) / 1000);
    const payload = Buffer.from(JSON.stringify({ id: uuid, pur: PURPOSE, exp: expiresAt })).toString('base64url');
    return `${payload}${SEPARATOR}${sign(payload)}`;
  };

  return {
    token,
    url(file, urlOptions) {
      return `${base}/file/${token(file.uuid, urlOptions)}/${encodeURIComponent(file.filename)}`;
    },
    verify(value, now = Date.now()) {
      const invalid = { ok: false, reason: 'invalid' } as const;
      // base64url may itself contain "--", so the signature is found by its fixed length.
      if (
        typeof value !== 'string' ||
        value.length > MAX_TOKEN_LENGTH ||
        value.length <= SIGNATURE_LENGTH + SEPARATOR.length
      )
        return invalid;
      const payload = value.slice(0, -(SIGNATURE_LENGTH + SEPARATOR.length));
      const separator = value.slice(payload.length, payload.length + SEPARATOR.length);
      const signature = value.slice(-SIGNATURE_LENGTH);
      if (separator !== SEPARATOR || !/^[A-Za-z0-9_-]+$/.test(payload)) return invalid;
      // Compare the canonical encodings, so no other spelling of the same digest is accepted.
      const expected = Buffer.from(sign(payload));
      const given = Buffer.from(signature);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return invalid;

      let claims: unknown;
      try {
        claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
      } catch {
        return invalid;
      }
      const { id, pur, exp } = (claims ?? {}) as { id?: unknown; pur?: unknown; exp?: unknown };
      if (
        pur !== PURPOSE ||
        typeof id !== 'string' ||
        !UUID_PATTERN.test(id) ||
        typeof exp !== 'number' ||
        !Number.isInteger(exp)
      )
        return invalid;
      if (exp * 1000 <= now) return { ok: false, reason: 'expired' };
      return { ok: true, uuid: id, expiresAt: exp * 1000 };
    },
  };
}
