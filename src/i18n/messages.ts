/**
 * Signet's fixed texts for signers, in each language of languages.ts: one message file per
 * language (locales/<code>.json), namespaces `form`, `email`, `sms`, `audit` and `consent`, each
 * key present in every language (test/i18n-catalogs.test.ts), plural forms by the language's own
 * categories (Intl.PluralRules).
 *
 * Library: i18next — a maintained i18n library with plural rules from Intl, interpolation and
 * fallbacks; the same library runs in the signing page (src/signing-form/page/), which is given
 * its language's `form` namespace only. The files are imported, so the service bundle
 * (scripts/build.mjs) carries them and nothing is read from disk at run time.
 */
import i18next, { type TOptions } from 'i18next';
import { DEFAULT_LANGUAGE, directionOf, LANGUAGE_CODES, type LanguageCode } from './languages.ts';
import en from './locales/en.json' with { type: 'json' };
import es from './locales/es.json' with { type: 'json' };
import it from './locales/it.json' with { type: 'json' };
import de from './locales/de.json' with { type: 'json' };
import fr from './locales/fr.json' with { type: 'json' };
import pl from './locales/pl.json' with { type: 'json' };
import uk from './locales/uk.json' with { type: 'json' };
import cs from './locales/cs.json' with { type: 'json' };
import pt from './locales/pt.json' with { type: 'json' };
import he from './locales/he.json' with { type: 'json' };
import nl from './locales/nl.json' with { type: 'json' };
import ar from './locales/ar.json' with { type: 'json' };
import ko from './locales/ko.json' with { type: 'json' };
import ja from './locales/ja.json' with { type: 'json' };
import zh from './locales/zh.json' with { type: 'json' };
import ru from './locales/ru.json' with { type: 'json' };
import tr from './locales/tr.json' with { type: 'json' };
import sv from './locales/sv.json' with { type: 'json' };
import da from './locales/da.json' with { type: 'json' };
import nb from './locales/nb.json' with { type: 'json' };
import fi from './locales/fi.json' with { type: 'json' };
import ro from './locales/ro.json' with { type: 'json' };

/** The namespaces of every message file. */
export const NAMESPACES = ['form', 'email', 'sms', 'audit', 'consent'] as const;
export type Namespace = (typeof NAMESPACES)[number];

/** A language's message file: per namespace, keys to messages (one level of nesting at most). */
export type Catalog = Record<Namespace, Record<string, string | Record<string, string>>>;

/** Every language's message file, by code. */
export const CATALOGS: Record<LanguageCode, Catalog> = {
  en,
  es,
  it,
  de,
  fr,
  pl,
  uk,
  cs,
  pt,
  he,
  nl,
  ar,
  ko,
  ja,
  zh,
  ru,
  tr,
  sv,
  da,
  nb,
  fi,
  ro,
};

const instance = i18next.createInstance();
void instance.init({
  resources: CATALOGS,
  ns: [...NAMESPACES],
  supportedLngs: [...LANGUAGE_CODES],
  fallbackLng: DEFAULT_LANGUAGE,
  // The texts are plain text; each output (HTML email, PDF, SMS) escapes what it needs.
  interpolation: { escapeValue: false },
  // Resources are given: init finishes synchronously.
  initAsync: false,
  returnNull: false,
});

/** A text of one namespace in one language: `(key, values?)` → the message (English when missing). */
export type Translate = (key: string, values?: TOptions) => string;

/**
 * The texts of `namespace` in `language`: a key missing there falls back to English, one missing
 * in English too is returned as it is (the catalog test fails on either).
 * @param language a code of LANGUAGE_CODES (chooseLanguage's answer)
 */
export function translator(language: LanguageCode, namespace: Namespace): Translate {
  const t = instance.getFixedT(language, namespace);
  return (key, values) => String(t(key, values ?? {}));
}

/** The namespaces the signing page is given (src/signing-form/page/i18n.ts). */
export const PAGE_NAMESPACES = ['form', 'consent'] as const satisfies readonly Namespace[];

/**
 * What the signing page's shell carries for its texts (src/signing-form/page/i18n.ts reads it):
 * the language, its direction, and the page's namespaces in that language and in English (the
 * fallback of a missing key).
 * @param language a code of LANGUAGE_CODES (signerLanguage's answer)
 */
export function pageMessages(language: LanguageCode): {
  language: LanguageCode;
  dir: 'ltr' | 'rtl';
  resources: Partial<Record<LanguageCode, Pick<Catalog, (typeof PAGE_NAMESPACES)[number]>>>;
} {
  const pick = (code: LanguageCode) => ({ form: CATALOGS[code].form, consent: CATALOGS[code].consent });
  return {
    language,
    dir: directionOf(language),
    resources: { [DEFAULT_LANGUAGE]: pick(DEFAULT_LANGUAGE), [language]: pick(language) },
  };
}
