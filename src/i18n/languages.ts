/**
 * The languages Signet speaks to signers, and which one a signer gets (issue 24, "The signer's
 * language"; DESIGN.md "Signer-facing pages").
 *
 * The list is DocuSeal's fourteen (app/javascript/submission_form/i18n.js: en es it de fr pl uk cs
 * pt he nl ar ko ja; he and ar right to left) and eight more. Each language has one message file,
 * src/i18n/locales/<code>.json, whose top-level keys are namespaces: `form` (the signing page, its
 * dialogs and its completed/declined/expired states), `email`, `sms`, `audit` (the audit log's
 * fixed texts) and `consent` (the default electronic-signature disclosure). Messages use i18next's
 * syntax (`{{name}}` interpolation, `_one`/`_other`/… plural suffixes chosen by Intl.PluralRules).
 *
 * The order of choice (`chooseLanguage`), first that names a language Signet speaks:
 * 1. what the page was asked for: the embed's `data-language`, a `?lang=` on the link;
 * 2. the submitter's language (Signet's `language` key), then its submission's, then DocuSeal's
 *    `metadata.lang` (which DocuSeal reads for the PDF and the audit trail only);
 * 3. the account's default language;
 * 4. the browser's Accept-Language, by its q-values;
 * 5. English.
 *
 * Library: `negotiator` (the Accept-Language parsing and matching Express and Fastify's plugins
 * use) for step 4; tags are read with `Intl.Locale` (BCP 47, built into Node and every browser).
 */
import Negotiator from 'negotiator';

/** A language Signet speaks: its code (ISO 639-1), names, and writing direction. */
export interface Language {
  code: LanguageCode;
  /** The language's name in English ("German"). */
  englishName: string;
  /** The language's name in itself ("Deutsch"), for a language menu. */
  nativeName: string;
  dir: 'ltr' | 'rtl';
}

/** Codes of the languages Signet speaks, in the order a menu lists them. */
export const LANGUAGE_CODES = [
  'en',
  'es',
  'it',
  'de',
  'fr',
  'pl',
  'uk',
  'cs',
  'pt',
  'he',
  'nl',
  'ar',
  'ko',
  'ja',
  'zh',
  'ru',
  'tr',
  'sv',
  'da',
  'nb',
  'fi',
  'ro',
] as const;

export type LanguageCode = (typeof LANGUAGE_CODES)[number];

/** The language used when nothing else names one. */
export const DEFAULT_LANGUAGE: LanguageCode = 'en';

const NAMES: Record<LanguageCode, [english: string, native: string]> = {
  en: ['English', 'English'],
  es: ['Spanish', 'Español'],
  it: ['Italian', 'Italiano'],
  de: ['German', 'Deutsch'],
  fr: ['French', 'Français'],
  pl: ['Polish', 'Polski'],
  uk: ['Ukrainian', 'Українська'],
  cs: ['Czech', 'Čeština'],
  pt: ['Portuguese', 'Português'],
  he: ['Hebrew', 'עברית'],
  nl: ['Dutch', 'Nederlands'],
  ar: ['Arabic', 'العربية'],
  ko: ['Korean', '한국어'],
  ja: ['Japanese', '日本語'],
  zh: ['Chinese (Simplified)', '简体中文'],
  ru: ['Russian', 'Русский'],
  tr: ['Turkish', 'Türkçe'],
  sv: ['Swedish', 'Svenska'],
  da: ['Danish', 'Dansk'],
  nb: ['Norwegian (Bokmål)', 'Norsk bokmål'],
  fi: ['Finnish', 'Suomi'],
  ro: ['Romanian', 'Română'],
};

const RIGHT_TO_LEFT = new Set<LanguageCode>(['he', 'ar']);

/** Every language Signet speaks, in LANGUAGE_CODES' order. */
export const LANGUAGES: readonly Language[] = LANGUAGE_CODES.map((code) => ({
  code,
  englishName: NAMES[code][0],
  nativeName: NAMES[code][1],
  dir: RIGHT_TO_LEFT.has(code) ? 'rtl' : 'ltr',
}));

/**
 * Tags that name a language Signet speaks under another code: DocuSeal's embed documentation's
 * `kr` for Korean, the older ISO codes `iw` (Hebrew) and `in`, Norwegian without a written
 * standard (`no`, `nn`: Bokmål's texts are the closest).
 */
const ALIASES: Record<string, LanguageCode> = { kr: 'ko', iw: 'he', no: 'nb', nn: 'nb' };

/** True for a code in LANGUAGE_CODES. */
export function isLanguageCode(value: unknown): value is LanguageCode {
  return typeof value === 'string' && (LANGUAGE_CODES as readonly string[]).includes(value);
}

/** The writing direction of a language: `rtl` for he and ar, else `ltr`. */
export function directionOf(code: LanguageCode): 'ltr' | 'rtl' {
  return RIGHT_TO_LEFT.has(code) ? 'rtl' : 'ltr';
}

/**
 * The language Signet speaks that a tag names: its base language (BCP 47: `pt-BR` → pt,
 * `zh-Hans-CN` → zh, `DE` → de), or an alias (`kr` → ko).
 * @param tag a language tag as a person or a program wrote it (case and `_` forgiven)
 * @returns the code, or undefined for an empty, malformed or unsupported tag
 */
export function matchLanguage(tag: string | null | undefined): LanguageCode | undefined {
  if (typeof tag !== 'string') return undefined;
  const trimmed = tag.trim().replace(/_/g, '-');
  if (trimmed === '' || trimmed.length > 64) return undefined;
  let base: string;
  try {
    base = new Intl.Locale(trimmed).language.toLowerCase();
  } catch {
    return undefined;
  }
  const code = ALIASES[base] ?? base;
  return isLanguageCode(code) ? code : undefined;
}

/** Where a signer's language may come from, each optional; see the module's comment for the order. */
export interface LanguageSources {
  /** What the page was asked for: the embed's `data-language`, a `?lang=` on the link. */
  requested?: string | null;
  /** The submitter's `language`. */
  submitter?: string | null;
  /** The submission's `language`. */
  submission?: string | null;
  /** DocuSeal's `metadata.lang` of the submitter. */
  metadataLang?: string | null;
  /** The account's default language. */
  account?: string | null;
  /** The request's Accept-Language header. */
  acceptLanguage?: string | null;
}

/**
 * The language a signer gets: the first source, in the module comment's order, that names a
 * language Signet speaks; a tag naming one it does not is passed over, not an error.
 * @returns a code of LANGUAGE_CODES (DEFAULT_LANGUAGE when no source names one)
 */
export function chooseLanguage(sources: LanguageSources): LanguageCode {
  for (const tag of [sources.requested, sources.submitter, sources.submission, sources.metadataLang, sources.account]) {
    const code = matchLanguage(tag);
    if (code) return code;
  }
  if (sources.acceptLanguage) {
    const negotiator = new Negotiator({ headers: { 'accept-language': sources.acceptLanguage } });
    // Negotiator matches a requested `de-CH` to an available `de`; each candidate is then read as a tag.
    for (const tag of negotiator.languages()) {
      const code = matchLanguage(tag);
      if (code) return code;
    }
  }
  return DEFAULT_LANGUAGE;
}
