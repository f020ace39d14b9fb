/**
 * Which language a signer gets, from what Signet knows of them (issue 24, "The signer's
 * language"): the one function every path that writes to a signer asks — the signing page, the
 * request and reminder emails and SMS, the completed copy, the audit log and the dates and numbers
 * drawn into the documents — so that they all agree.
 *
 * Its sources, in chooseLanguage's order (src/i18n/languages.ts):
 * 1. what a page was asked for (the embed's `data-language`, a `?lang=`), when there is a request;
 * 2. the submitter's `language`, then its submission's (Signet's key: DocuSeal's API has none,
 *    docs/compatibility.md "The signer's language"), then DocuSeal's `metadata.lang` of the
 *    submitter (which DocuSeal reads for the PDF and the audit trail);
 * 3. the account's default language (its `default_language` setting: GraphQL
 *    `updateAccountPreferences`, `signet account settings --default-language`);
 * 4. the request's Accept-Language, when there is a request;
 * 5. English.
 * A stored tag naming a language Signet does not speak is passed over (the API refuses such tags,
 * but `metadata.lang` is free JSON).
 *
 * Also here: `LanguageTagInput`, the one definition of a language tag the API accepts (zod; the
 * REST bodies and GraphQL inputs are derived from it), and its normalisation to a code.
 */
import { MAX_LENGTH, text } from '../limits.ts';
import { chooseLanguage, LANGUAGE_CODES, type LanguageCode, matchLanguage } from './languages.ts';

/**
 * A language tag as the API takes it (`language` of submitters, submissions and the account's
 * `default_language`): a code of LANGUAGE_CODES or any BCP 47 tag of such a language (`pt-BR`,
 * `de_AT`, DocuSeal's `kr`), case-insensitive; "" means none (clears it on an update).
 * Refused otherwise: "language must be one of en, es, it, … (or a tag of one, such as pt-BR)"; at
 * most MAX_LENGTH.languageTag characters.
 */
export const LanguageTagInput = text(MAX_LENGTH.languageTag).refine(
  (tag) => tag.trim() === '' || matchLanguage(tag) !== undefined,
  {
    message: `language must be one of ${LANGUAGE_CODES.join(', ')} (or a tag of one, such as pt-BR)`,
  },
);

/**
 * The code a tag accepted by LanguageTagInput is stored as: `pt-BR` → `pt`, `KR` → `ko`; null
 * for "" (no language).
 */
export function storedLanguage(tag: string): LanguageCode | null {
  return tag.trim() === '' ? null : (matchLanguage(tag) ?? null);
}

/** DocuSeal's `metadata.lang` of a submitter (its `metadata` JSON), when it is a string. */
export function metadataLang(metadata: unknown): string | undefined {
  const lang = typeof metadata === 'object' && metadata !== null ? (metadata as { lang?: unknown }).lang : undefined;
  return typeof lang === 'string' ? lang : undefined;
}

/**
 * The account's default language: the `default_language` key of its `preferences` JSON
 * (src/accounts/account-preferences.ts stores it), when it names a language Signet speaks.
 */
export function accountDefaultLanguage(preferences: unknown): LanguageCode | undefined {
  const stored =
    typeof preferences === 'object' && preferences !== null
      ? (preferences as { default_language?: unknown }).default_language
      : undefined;
  return typeof stored === 'string' ? matchLanguage(stored) : undefined;
}

/** What is stored about a signer that names a language (columns as Prisma reads them). */
export interface SignerLanguageRecord {
  /** The submitter's `language` column and `metadata` JSON (`metadata.lang`). */
  submitter: { language?: string | null; metadata?: unknown };
  /** The submission's `language` column. */
  submission: { language?: string | null };
  /** The account's `preferences` JSON (`default_language`). */
  account: { preferences?: unknown };
}

/** What a request tells of the signer's language, when the signer is on a page. */
export interface SignerLanguageRequest {
  /** The embed's `data-language`, a `?lang=` of the link. */
  requested?: string | null;
  /** The request's Accept-Language header. */
  acceptLanguage?: string | null;
}

/**
 * The language a signer gets (see the module comment for the order).
 * @param request the page's request, when there is one; emails, SMS and the completion have none
 * @returns a code of LANGUAGE_CODES (`en` when nothing names one Signet speaks)
 */
export function signerLanguage(record: SignerLanguageRecord, request: SignerLanguageRequest = {}): LanguageCode {
  return chooseLanguage({
    requested: request.requested,
    submitter: record.submitter.language,
    submission: record.submission.language,
    metadataLang: metadataLang(record.submitter.metadata),
    account: accountDefaultLanguage(record.account.preferences),
    acceptLanguage: request.acceptLanguage,
  });
}
