/**
 * The signer's languages (issue 24 "The signer's language"; src/i18n/): every message file has
 * English's keys in every namespace, no more and none empty, each plural message in exactly the
 * plural categories of its language (Intl.PluralRules), the same placeholders as English; and the
 * order in which a signer's language is chosen.
 */
import { describe, expect, it } from 'vitest';
import { chooseLanguage, directionOf, LANGUAGE_CODES, matchLanguage } from '../src/i18n/languages.ts';
import { CATALOGS, NAMESPACES, translator } from '../src/i18n/messages.ts';

const PLURAL_SUFFIX = /_(zero|one|two|few|many|other)$/;

/** Flattened `namespace.key` → message of a catalog (one level of nesting below a namespace). */
function flatten(namespace: Record<string, string | Record<string, string>>): Map<string, string> {
  const flat = new Map<string, string>();
  for (const [key, value] of Object.entries(namespace)) {
    if (typeof value === 'string') flat.set(key, value);
    else for (const [inner, text] of Object.entries(value)) flat.set(`${key}.${inner}`, text);
  }
  return flat;
}

/** Keys without their plural suffix, each with the suffixes it has (empty set: not a plural). */
function baseKeys(flat: Map<string, string>): Map<string, Set<string>> {
  const bases = new Map<string, Set<string>>();
  for (const key of flat.keys()) {
    const match = PLURAL_SUFFIX.exec(key);
    const base = match ? key.slice(0, match.index) : key;
    const suffixes = bases.get(base) ?? new Set<string>();
    if (match) suffixes.add(match[1]!);
    bases.set(base, suffixes);
  }
  return bases;
}

const placeholders = (text: string) => new Set([...text.matchAll(/\{\{\s*([\w.]+)[^}]*\}\}/g)].map((m) => m[1]!));

describe('message files', () => {
  const english = CATALOGS.en;

  it('every language has every namespace, and no other', () => {
    for (const code of LANGUAGE_CODES) expect(Object.keys(CATALOGS[code]).sort(), code).toEqual([...NAMESPACES].sort());
  });

  for (const namespace of NAMESPACES) {
    it(`${namespace}: English's keys in every language, plurals by its categories, same placeholders`, () => {
      const englishFlat = flatten(english[namespace]);
      const englishBases = baseKeys(englishFlat);
      for (const code of LANGUAGE_CODES) {
        const flat = flatten(CATALOGS[code][namespace]);
        const bases = baseKeys(flat);
        expect([...bases.keys()].sort(), `${code} ${namespace}: keys`).toEqual([...englishBases.keys()].sort());
        const categories = new Set(new Intl.PluralRules(code).resolvedOptions().pluralCategories);
        for (const [base, suffixes] of englishBases) {
          const own = bases.get(base)!;
          if (suffixes.size === 0) {
            expect(own.size, `${code} ${namespace}.${base} is not a plural in English`).toBe(0);
            continue;
          }
          expect([...own].sort(), `${code} ${namespace}.${base}: plural forms`).toEqual([...categories].sort());
        }
        for (const [key, text] of flat) {
          expect(text.trim(), `${code} ${namespace}.${key} is empty`).not.toBe('');
          const base = key.replace(PLURAL_SUFFIX, '');
          const englishKey = englishFlat.has(key) ? key : [...englishFlat.keys()].find((k) => k.startsWith(`${base}_`));
          const wanted = placeholders(englishFlat.get(englishKey!) ?? '');
          const own = placeholders(text);
          // A plural form may leave the count out ("one file"); every other placeholder stays.
          wanted.delete('count');
          own.delete('count');
          expect([...own].sort(), `${code} ${namespace}.${key}: placeholders`).toEqual([...wanted].sort());
        }
      }
    });
  }

  it('a key missing in a language falls back to English; one missing everywhere is returned as it is', () => {
    expect(translator('de', 'form')('signet_test_no_such_key')).toBe('signet_test_no_such_key');
  });
});

describe('which language a signer gets', () => {
  it('reads tags by their base language and aliases, and passes over what it does not speak', () => {
    expect(matchLanguage('pt-BR')).toBe('pt');
    expect(matchLanguage('zh-Hans-CN')).toBe('zh');
    expect(matchLanguage('DE')).toBe('de');
    expect(matchLanguage('de_AT')).toBe('de');
    expect(matchLanguage('kr')).toBe('ko');
    expect(matchLanguage('no')).toBe('nb');
    expect(matchLanguage('xx')).toBeUndefined();
    expect(matchLanguage('not a tag')).toBeUndefined();
    expect(matchLanguage('')).toBeUndefined();
    expect(directionOf('ar')).toBe('rtl');
    expect(directionOf('he')).toBe('rtl');
    expect(directionOf('fr')).toBe('ltr');
  });

  it('takes the request, the submitter, submission, metadata.lang, account, Accept-Language, English', () => {
    const all = {
      requested: 'ar',
      submitter: 'de',
      submission: 'fr',
      metadataLang: 'es',
      account: 'it',
      acceptLanguage: 'ja',
    };
    expect(chooseLanguage(all)).toBe('ar');
    expect(chooseLanguage({ ...all, requested: undefined })).toBe('de');
    expect(chooseLanguage({ ...all, requested: 'xx', submitter: null })).toBe('fr');
    expect(chooseLanguage({ ...all, requested: null, submitter: null, submission: null })).toBe('es');
    expect(chooseLanguage({ account: 'it', acceptLanguage: 'ja' })).toBe('it');
    expect(chooseLanguage({ acceptLanguage: 'sv-SE;q=0.5, de-CH;q=0.9, xx;q=1' })).toBe('de');
    expect(chooseLanguage({ acceptLanguage: 'xx, *;q=0.1' })).toBe('en');
    expect(chooseLanguage({})).toBe('en');
  });
});
