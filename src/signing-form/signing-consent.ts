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
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '../errors.ts';
import { LANGUAGE_CODES, type LanguageCode, matchLanguage } from '../i18n/languages.ts';
import { translator } from '../i18n/messages.ts';
import { signerLanguage } from '../i18n/signer-language.ts';
import { MAX_LENGTH, text } from '../limits.ts';
import { trackingData, type SignerRequest, type SigningFormDeps } from './form-events.ts';
import { assertFormOpen, findSignerBySlug, lockSignerForm, type SignerForm } from './form-state.ts';
import { buildSigningFormView, type SigningFormView } from './load-signing-form.ts';
import type { SigningFormViewOf } from './view-types.ts';

/** The submission event an acceptance is recorded as (Signet's type; DocuSeal has none). */
export const CONSENT_EVENT = 'consent_accepted';

/** The key of an account's text for the languages it gives none for. */
const DEFAULT_KEY = 'default';

const consentText = text(MAX_LENGTH.consentText);

/**
 * An account's own disclosure as the API takes it (`signing_consent_text`): one text for every
 * language, or `{"<code>": text, …, "default": text}` (codes of src/i18n/languages.ts or tags of
 * them; `default` for the other languages). "" or `{}` removes it (Signet's text is shown).
 * Refused: a key that names no language, an empty text, a text over MAX_LENGTH.consentText.
 */
export const SigningConsentTextInput = z
  .union([consentText, z.record(z.string(), consentText)])
  .superRefine((value, ctx) => {
    if (typeof value === 'string') return;
    for (const [key, entry] of Object.entries(value)) {
      if (key !== DEFAULT_KEY && !matchLanguage(key))
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message:
            `signing_consent_text: "${key}" is not a language ` +
            `(use default or one of ${LANGUAGE_CODES.join(', ')})`,
        });
      else if (entry.trim() === '')
        ctx.addIssue({ code: 'custom', path: [key], message: `signing_consent_text: the ${key} text is empty` });
    }
  });
export type SigningConsentTextInput = z.infer<typeof SigningConsentTextInput>;

/**
 * How an accepted SigningConsentTextInput is stored: `{default?, <code>?}` with the texts trimmed
 * and tags reduced to codes; null when it removes the account's text.
 */
export function storedConsentText(input: SigningConsentTextInput): Record<string, string> | null {
  const entries = typeof input === 'string' ? [[DEFAULT_KEY, input] as const] : Object.entries(input);
  const stored: Record<string, string> = {};
  for (const [key, entry] of entries) {
    if (entry.trim() === '') continue;
    stored[key === DEFAULT_KEY ? DEFAULT_KEY : matchLanguage(key)!] = entry.trim();
  }
  return Object.keys(stored).length > 0 ? stored : null;
}

/** The account's own texts (its preferences' `signing_consent_text`), or null when it has none. */
export function accountConsentTexts(preferences: unknown): Record<string, string> | null {
  const stored =
    typeof preferences === 'object' && preferences !== null
      ? (preferences as { signing_consent_text?: unknown }).signing_consent_text
      : undefined;
  if (typeof stored !== 'object' || stored === null) return null;
  const texts = Object.fromEntries(
    Object.entries(stored).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''),
  );
  return Object.keys(texts).length > 0 ? texts : null;
}

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
  const chosen = own?.[language] ?? own?.[DEFAULT_KEY];
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

const VERSION_PATTERN = /^(default|account)-([a-z]{2})-[0-9a-f]{12}$/;

/**
 * The signer accepts the disclosure of `version` (docs/signing-form.md "Consent"): a
 * `consent_accepted` event with the signer's IP and user agent, the version, its language and the
 * text's SHA-256, in the form's transaction (row locks, as every change of a form). Accepting the
 * version last accepted again records nothing.
 * @param request.version the version the signer was shown (SigningForm.consent.version)
 * @throws AppError NOT_FOUND for an unknown slug; VALIDATION with DocuSeal's message when the form
 *   is not OPEN; VALIDATION "Disclosure version … is not the current one …" for a version that
 *   names no current text (malformed, or the text changed since the page loaded it)
 */
export async function acceptSigningConsent(
  deps: SigningFormDeps,
  request: SignerRequest & { version: string },
): Promise<SigningFormView> {
  const found = await findSignerBySlug(deps.db, request.slug);
  const now = new Date();
  assertFormOpen({ submitter: found, submission: found.submission }, now);
  const signer = await deps.effects.transaction(async (tx) => {
    const signer = await lockSignerForm(tx, found);
    assertFormOpen({ submitter: signer, submission: signer.submission }, now);
    const match = VERSION_PATTERN.exec(request.version);
    const language = match ? matchLanguage(match[2]) : undefined;
    const disclosure = language ? consentDisclosure(signer.submission.account, language) : undefined;
    if (!disclosure || disclosure.version !== request.version)
      throw new AppError(
        'VALIDATION',
        `Disclosure version "${request.version.slice(0, 64)}" is not the current one: load the form again and ` +
          'accept the disclosure it shows.',
      );
    if (latestAcceptance(signer)?.version === disclosure.version) return signer;
    const data = {
      ...trackingData(request),
      version: disclosure.version,
      language: disclosure.language,
      sha256: disclosure.sha256,
    };
    await tx.submissionEvent.create({
      data: {
        accountId: signer.accountId,
        submissionId: signer.submissionId,
        submitterId: signer.id,
        eventType: CONSENT_EVENT,
        eventTimestamp: now,
        data,
      },
    });
    return { ...signer, events: [{ eventTimestamp: now, data }] };
  });
  return buildSigningFormView(deps, signer, now);
}
