/**
 * An account's own electronic-signature disclosure (issue 24 §4; docs/signing-form.md "Consent"):
 * the `signing_consent_text` of its preferences, as the API takes it (GraphQL
 * updateAccountPreferences, `signet account settings --consent-text`) and as it is stored. The
 * disclosure a signer is shown, Signet's or the account's, is src/signing-form/signing-consent.ts.
 */
import { z } from 'zod';
import { LANGUAGE_CODES, matchLanguage } from '../i18n/languages.ts';
import { MAX_LENGTH, text } from '../limits.ts';

/** The key of an account's text for the languages it gives none for. */
export const DEFAULT_CONSENT_KEY = 'default';

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
      if (key !== DEFAULT_CONSENT_KEY && !matchLanguage(key))
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
  const entries = typeof input === 'string' ? [[DEFAULT_CONSENT_KEY, input] as const] : Object.entries(input);
  const stored: Record<string, string> = {};
  for (const [key, entry] of entries) {
    if (entry.trim() === '') continue;
    stored[key === DEFAULT_CONSENT_KEY ? DEFAULT_CONSENT_KEY : matchLanguage(key)!] = entry.trim();
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
