/**
 * The signer's consent to sign electronically (issue 24 §4; docs/signing-form.md "Consent"): the
 * disclosure a signer reads and accepts before the first signature, its version, the acceptance
 * recorded, and the rule that the page's signature saves and its completion wait for it.
 *
 * The disclosure is what ESIGN §101(c) (15 U.S.C. §7001(c)(1)) asks to be said before a consumer
 * consents to electronic records — scope, the right to paper copies and whether a fee applies, how
 * to withdraw and what that does, the hardware and software needed — and what eIDAS practice
 * (Regulation 910/2014 art. 25) and Documenso's and OpenSign's disclosures say: that an electronic
 * signature has the effect of a handwritten one. Signet's default text is the `consent` namespace
 * of src/i18n/locales/<code>.json (`text`, `{{account}}` the account's name); an account may set
 * its own (`signing_consent_text` of its preferences: one text, or one per language with `default`
 * for the others). DocuSeal has no such step; Signet's acceptance is its own event type,
 * `consent_accepted` (`data`: ip, ua, version, language, sha256).
 *
 * A version names one exact text: `<source>-<language>-<first 12 hex digits of its SHA-256>`,
 * source `default` (Signet's text) or `account` (the account's), e.g. `default-de-3f2a9c1b7d0e`.
 * It changes whenever the text does (a corrected translation, the account's new text, the
 * account's new name), so an acceptance always names what was read.
 *
 * The page's writes wait for an acceptance of any version (a signer who agreed keeps their
 * agreement when the text changes later); the API's own paths (REST, the sender's GraphQL) are the
 * sender's and are not held to it.
 *
 * The account's own texts are src/accounts/consent-texts.ts; the acceptance is
 * ./accept-signing-consent.ts.
 */
import { createHash } from 'node:crypto';
import { AppError } from '../errors.ts';
import { accountConsentTexts, DEFAULT_CONSENT_KEY } from '../accounts/consent-texts.ts';
import { type LanguageCode, matchLanguage } from '../i18n/languages.ts';
import { translator } from '../i18n/messages.ts';
import { signerLanguage } from '../i18n/signer-language.ts';
import type { SignerForm } from './form-state.ts';
import type { SigningFormViewOf } from './view-types.ts';

/** The submission event an acceptance is recorded as (Signet's type; DocuSeal has none). */
export const CONSENT_EVENT = 'consent_accepted';

/** The disclosure a signer is shown: its text (paragraphs split by a blank line) and version. */
export interface ConsentDisclosure {
  text: string;
  version: string;
  language: LanguageCode;
  /** SHA-256 of the text, lower-case hex. */
  sha256: string;
}

/**
 * The disclosure in a language: the account's text for that language, else its `default` text,
 * else Signet's text in that language with the account's name.
 */
export function consentDisclosure(
  account: { name: string; preferences: unknown },
  language: LanguageCode,
): ConsentDisclosure {
  const own = accountConsentTexts(account.preferences);
  const chosen = own?.[language] ?? own?.[DEFAULT_CONSENT_KEY];
  const source = chosen === undefined ? 'default' : 'account';
  const disclosure = chosen ?? translator(language, 'consent')('text', { account: account.name });
  const sha256 = createHash('sha256').update(disclosure, 'utf8').digest('hex');
  return { text: disclosure, version: `${source}-${language}-${sha256.slice(0, 12)}`, language, sha256 };
}

/** The signer's latest acceptance (any version), as formSelect loads it, or null. */
export function latestAcceptance(signer: SignerForm): { at: Date; version: string | null } | null {
  const event = signer.events[0];
  if (!event) return null;
  const version = (event.data as { version?: unknown }).version;
  return { at: event.eventTimestamp, version: typeof version === 'string' ? version : null };
}

/**
 * The form's `consent` in a language: the disclosure, and when the signer accepted (any version).
 * @param language a tag the page asks for (its own language); else the signer's language as stored
 *   (signerLanguage without a request)
 */
export function signingFormConsent(
  signer: SignerForm,
  language?: string | null,
): SigningFormViewOf<Date, unknown>['consent'] {
  const code =
    matchLanguage(language) ??
    signerLanguage({ submitter: signer, submission: signer.submission, account: signer.submission.account });
  const disclosure = consentDisclosure(signer.submission.account, code);
  const accepted = latestAcceptance(signer);
  return {
    text: disclosure.text,
    version: disclosure.version,
    acceptedAt: accepted?.at ?? null,
    acceptedVersion: accepted?.version ?? null,
  };
}

/** The message of a signature save or a completion refused for want of consent. */
export const CONSENT_REQUIRED_MESSAGE =
  'Please agree to sign electronically first: accept the electronic signature disclosure (acceptSigningConsent).';

/**
 * Refuses the page's signature saves and completion until the signer accepted the disclosure.
 * @throws AppError VALIDATION (422) CONSENT_REQUIRED_MESSAGE
 */
export function assertConsented(signer: SignerForm): void {
  if (!latestAcceptance(signer)) throw new AppError('VALIDATION', CONSENT_REQUIRED_MESSAGE);
}
