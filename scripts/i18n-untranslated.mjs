#!/usr/bin/env node
// Lists the keys of a namespace (default `form`) whose text in a language is still the English text.
// Usage: node scripts/i18n-untranslated.mjs [namespace] [--summary]
// Plural keys are compared with the English `_other` (or same-suffix) text. Exit code 0 always: a
// few identical values are correct (brand names, "OK"); the caller judges the list.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = new URL('../src/i18n/locales/', import.meta.url).pathname;
const ns = process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 'form';
const summary = process.argv.includes('--summary');
const flat = (o, p = '') =>
  Object.entries(o).flatMap(([k, v]) => (typeof v === 'object' ? flat(v, `${p}${k}.`) : [[`${p}${k}`, v]]));
const en = Object.fromEntries(flat(JSON.parse(readFileSync(join(dir, 'en.json'), 'utf8'))[ns]));
const plural = /_(zero|one|two|few|many|other)$/;
for (const file of readdirSync(dir).sort()) {
  if (file === 'en.json') continue;
  const code = file.replace('.json', '');
  const entries = flat(JSON.parse(readFileSync(join(dir, file), 'utf8'))[ns] ?? {});
  const same = entries.filter(([k, v]) => {
    const base = k.replace(plural, '');
    return v === en[k] || (base !== k && (v === en[`${base}_other`] || v === en[`${base}_one`]));
  });
  if (summary) console.log(`${code}: ${same.length}/${entries.length} identical to English`);
  else for (const [k, v] of same) console.log(`${code}\t${k}\t${v}`);
}
