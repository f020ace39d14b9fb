/**
 * The webhook signature (../shared/DESIGN.md "webhook signature", as DocuSeal's
 * `lib/webhook_urls/signatures.rb`):
 *
 *     X-Docuseal-Signature: <unix_ts>.<hex HMAC-SHA256(secret, "<unix_ts>.<raw body>")>
 *
 * During the 24 hours after a secret rotation the header carries one such signature per valid
 * secret, space-separated, the current secret's first:
 *
 *     X-Docuseal-Signature: 1763740000.<hmac with the new secret> 1763740000.<hmac with the old secret>
 *
 * so a receiver still holding the old secret and one already holding the new one both find a
 * match. Outside a rotation the header is exactly DocuSeal's. Verifiers split the header on
 * spaces and accept when any signature matches (docs/webhooks.md has the code).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Docuseal-Signature';

/** hex HMAC-SHA256(secret, "<timestamp>.<body>"). */
export function computeSignature(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/**
 * The header value for a body sent at `timestamp` (unix seconds): one `<ts>.<hex>` per secret,
 * space-separated, in the order given (current first).
 */
export function signatureHeader(secrets: string[], timestamp: number, body: string): string {
  return secrets.map((secret) => `${timestamp}.${computeSignature(secret, timestamp, body)}`).join(' ');
}

/**
 * The secrets an endpoint signs with at `now`: the current one, plus the previous one while it
 * is still valid (24 hours after a rotation).
 */
export function signingSecrets(
  endpoint: { secret: string; previousSecret: string | null; previousSecretExpiresAt: Date | null },
  now: Date,
): string[] {
  const previousValid =
    endpoint.previousSecret &&
    endpoint.previousSecretExpiresAt &&
    endpoint.previousSecretExpiresAt.getTime() > now.getTime();
  return previousValid ? [endpoint.secret, endpoint.previousSecret!] : [endpoint.secret];
}

/**
 * Checks a received header against one secret, as a receiver would (docs/webhooks.md).
 * @param toleranceSeconds largest accepted age or skew of the timestamp (DocuSeal's verifier: 300)
 * @returns true when some `<ts>.<hex>` of the header matches and its timestamp is within the tolerance
 */
export function verifySignature(
  header: string,
  secret: string,
  body: string,
  options: { now?: Date; toleranceSeconds?: number } = {},
): boolean {
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  return header.split(' ').some((part) => {
    const match = /^(\d+)\.([0-9a-f]{64})$/.exec(part.trim());
    if (!match) return false;
    const timestamp = Number(match[1]);
    if (Math.abs(now - timestamp) > tolerance) return false;
    const expected = Buffer.from(computeSignature(secret, timestamp, body), 'hex');
    return timingSafeEqual(expected, Buffer.from(match[2]!, 'hex'));
  });
}
