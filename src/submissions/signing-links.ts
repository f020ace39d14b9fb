/**
 * The tag `t` on the signing link of a request email, by which the page reports "Email link
 * clicked" (src/signing-form/email-clicks.ts; DocuSeal's `SubmissionEvents.build_tracking_param`,
 * lib/submission_events.rb): the first 6 characters (DocuSeal's TRACKING_PARAM_LENGTH) of the
 * base64url HMAC-SHA256 of `<slug>:click_email` under the service's secret (DocuSeal hashes the
 * slug, event and secret with SHA-1; an HMAC is the keyed construction). Made where the links are
 * made (the request emails), checked by the signing form.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** DocuSeal's SubmissionEvents::TRACKING_PARAM_LENGTH. */
const TAG_LENGTH = 6;

/** Makes and checks the click tags of signing links. */
export interface EmailClickTags {
  /** The `t` of a submitter's signing link in a request email. */
  tag(slug: string): string;
  /** True when `t` is the submitter's tag (constant-time comparison). */
  matches(slug: string, t: string): boolean;
}

/** @param secret the service's secret key base (src/documents/secret-key.ts) */
export function createEmailClickTags(secret: string): EmailClickTags {
  const tag = (slug: string) =>
    createHmac('sha256', secret).update(`${slug}:click_email`).digest('base64url').slice(0, TAG_LENGTH);
  return {
    tag,
    matches(slug, t) {
      const expected = Buffer.from(tag(slug));
      const given = Buffer.from(t);
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}
