/**
 * The page's texts in the signer's language (issue 24 §2; docs/signing-form.md "Languages").
 *
 * The server chooses the language (src/i18n/signer-language.ts: the embed's `data-language` or the
 * link's `?lang=`, the submitter's or submission's `language`, `metadata.lang`, the account's
 * default, Accept-Language) and writes it into the shell: `<html lang dir>` and a JSON script
 * `#signet-messages` holding that language's `form` and `consent` namespaces, and English's as
 * the fallback (src/signing-form/page-routes.ts `shellPage`). Nothing else is fetched.
 *
 * Library: i18next, the one the server uses (src/i18n/messages.ts): the same message files, the
 * same plural rules (Intl.PluralRules) and interpolation, so a text reads the same in an email and
 * on the page.
 */
import i18next, { type Resource, type TOptions } from 'i18next';

/** What the shell's `#signet-messages` script holds. */
export interface PageMessages {
  /** The page's language: a code of src/i18n/languages.ts. */
  language: string;
  /** The writing direction of that language. */
  dir: 'ltr' | 'rtl';
  /** Per language (the page's and `en`), per namespace (`form`, `consent`), key → message. */
  resources: Record<string, Record<string, Record<string, unknown>>>;
}

function readMessages(): PageMessages {
  const element = document.getElementById('signet-messages');
  try {
    if (element?.textContent) return JSON.parse(element.textContent) as PageMessages;
  } catch {
    // A shell without its messages (never served so): English keys below.
  }
  return { language: 'en', dir: 'ltr', resources: {} };
}

const messages = readMessages();

/** The page's language (a code of src/i18n/languages.ts), as the server chose it. */
export const pageLanguage: string = messages.language;

/** The page's writing direction. */
export const pageDirection: 'ltr' | 'rtl' = messages.dir;

const instance = i18next.createInstance();
void instance.init({
  lng: messages.language,
  fallbackLng: 'en',
  ns: ['form', 'consent'],
  defaultNS: 'form',
  resources: messages.resources as Resource,
  // Texts are set as text (dom.ts `h`), never parsed as HTML.
  interpolation: { escapeValue: false },
  initAsync: false,
  returnNull: false,
});

/**
 * A text of the page in its language: `t('complete')`, `t('fieldsLeft', { count: 2 })`,
 * `t('consent:text')` for the consent namespace. A key missing in the language falls back to
 * English; one missing in English too is returned as the key (test/i18n-catalogs.test.ts fails
 * on both).
 */
export function t(key: string, values?: TOptions): string {
  return String(instance.t(key, values ?? {}));
}
