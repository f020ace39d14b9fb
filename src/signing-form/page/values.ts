/**
 * Values in the browser: what counts as filled, the browser-side checks made before completing
 * (the server checks required fields and patterns again), and how a value is shown read-only.
 * Stored shapes follow docuseal-behaviour.md §11.
 *
 * Patterns run on the server's own checker (src/templates/field-pattern.ts, RE2 through re2js),
 * loaded with a dynamic `import()`: esbuild puts it and re2js (~46 KB of gzipped JS, 70 % of the
 * page's script) in a chunk of their own (page-routes.ts bundlePage), fetched only by forms with a
 * pattern — as soon as such a form is shown (preloadPatterns), and awaited by checkValue.
 */
import { dateKind, formatFieldValue } from '../../signing/format-values.ts';
import { pageLanguage, t } from './i18n.ts';
import type { SigningFormField } from './types.ts';

/** E.164: "+", a country code that does not start with 0, at most 15 digits in all (ITU-T E.164). */
export const E164_PATTERN = /^\+[1-9]\d{1,14}$/;

/** Types whose value the signer cannot type or pick. */
export const DISPLAY_ONLY_TYPES: ReadonlySet<string> = new Set(['stamp', 'heading', 'strikethrough']);

/** Types whose values `validation.pattern` applies to (as the server's check, src/signing-form/field-values.ts). */
const PATTERN_TYPES: ReadonlySet<string> = new Set(['text', 'cells', 'number', 'phone', 'date']);

/** Whether the signer fills this field on this page: their own, not readonly, not display-only. */
export function isEditable(field: SigningFormField): boolean {
  return field.own && !field.readonly && !DISPLAY_ONLY_TYPES.has(field.type);
}

/** Whether a value counts as given: not null/empty string/empty list; a checkbox must be ticked. */
export function isFilled(field: SigningFormField, value: unknown): boolean {
  if (value === null || value === undefined) return false;
  if (field.type === 'checkbox') return value === true;
  if (typeof value === 'string') return value.trim() !== '';
  if (Array.isArray(value)) return value.length > 0;
  return true;
}

/** The field's name as the signer sees it. */
export const fieldLabel = (field: SigningFormField): string => field.title?.trim() || field.name || field.type;

/** The field's `validation.pattern` when it applies to the field's type, else undefined. */
function patternText(field: SigningFormField): string | undefined {
  const pattern = field.validation?.pattern;
  return PATTERN_TYPES.has(field.type) && typeof pattern === 'string' && pattern !== '' ? pattern : undefined;
}

type PatternChecker = typeof import('../../templates/field-pattern.ts');
let patternChecker: Promise<PatternChecker> | undefined;

/**
 * The pattern checker's chunk (/s-assets/chunks/field-pattern-<hash>.js), fetched once; a failed
 * fetch is tried again.
 */
function loadPatternChecker(): Promise<PatternChecker> {
  patternChecker ??= import('../../templates/field-pattern.ts').catch((error: unknown) => {
    patternChecker = undefined;
    throw error;
  });
  return patternChecker;
}

/**
 * Starts fetching the pattern checker when one of `fields` has a pattern (the form's first
 * check then need not wait for it); a form without patterns never fetches it.
 */
export function preloadPatterns(fields: readonly SigningFormField[]): void {
  if (fields.some((field) => patternText(field) !== undefined)) void loadPatternChecker().catch(() => undefined);
}

/**
 * A text field's validation pattern matching the whole value (as the HTML `pattern` attribute
 * does, which DocuSeal's form uses), on RE2 as on the server (field-pattern.ts): true when it
 * matches, when there is none or it cannot be used (the template's fault), and when the checker's
 * chunk cannot be fetched — then the server's check, the same code, judges the value at Complete.
 */
async function matchesPattern(field: SigningFormField, value: string): Promise<boolean> {
  const pattern = patternText(field);
  if (pattern === undefined) return true;
  let checker: PatternChecker;
  try {
    checker = await loadPatternChecker();
  } catch {
    return true;
  }
  return checker.compileFieldPattern(pattern)?.test(value) ?? true;
}

/**
 * The browser-side check of one value before completing, or null when it passes: required
 * ("<name> is required", the server's wording), `validation.pattern` on text, cells, number, phone
 * and date values (the field's invalid message, else "<name> is invalid"), phone numbers in E.164,
 * numbers, and payment, which cannot be completed while payments are not configured.
 * Asynchronous because a pattern field's first check may wait for the pattern checker's chunk.
 */
export async function checkValue(field: SigningFormField, value: unknown): Promise<string | null> {
  const name = fieldLabel(field);
  if (field.type === 'payment') {
    return field.required ? t('check.paymentNotConfigured') : null;
  }
  if (!isFilled(field, value)) return field.required ? t('check.required', { name }) : null;
  if (PATTERN_TYPES.has(field.type) && typeof value !== 'object') {
    if (!(await matchesPattern(field, String(value)))) {
      const message = field.validation?.message;
      return typeof message === 'string' && message.trim() ? message : t('check.invalid', { name });
    }
  }
  if (field.type === 'phone' && (typeof value !== 'string' || !E164_PATTERN.test(value))) {
    return t('check.phone');
  }
  if (field.type === 'number' && (typeof value !== 'number' || !Number.isFinite(value)))
    return t('check.number', { name });
  return null;
}

/** A phone number as typed, without spaces, dashes, dots and brackets; "00" becomes "+". */
export function normalizePhone(input: string): string {
  const compact = input.replace(/[\s\-.()]/g, '');
  return compact.startsWith('00') ? `+${compact.slice(2)}` : compact;
}

/**
 * Today as a date field with `format` stores it (the `{{date}}` default; DocuSeal's
 * TimeUtils.current_date_value): YYYY-MM-DD in the signer's time zone, YYYY-MM for a month-only
 * format, the instant in UTC for a format with a time.
 */
export function today(format?: unknown): string {
  const now = new Date();
  const pad = (n: number) => String(n).padStart(2, '0');
  const kind = dateKind(format);
  if (kind === 'datetime') return now.toISOString();
  const month = `${now.getFullYear()}-${pad(now.getMonth() + 1)}`;
  return kind === 'month' ? month : `${month}-${pad(now.getDate())}`;
}

/**
 * The language the documents print dates and numbers in: the party's stored one, which the
 * completion draws with (the shell's `data-values-language`, src/signing-form/page-routes.ts), else
 * the page's.
 */
const valuesLanguage = document.getElementById('signing-form')?.dataset.valuesLanguage || pageLanguage;

/**
 * A value as text for a read-only display (not for attachments, which are shown as images or
 * links): dates and numbers exactly as the signed documents print them — the one formatting path,
 * src/signing/format-values.ts formatFieldValue, in the documents' language (issue 24: the form
 * showed 11/28/2026 where the PDF printed 28/11/2026) and the browser's time zone.
 */
export function displayText(field: SigningFormField, value: unknown): string {
  if (value === null || value === undefined) return '';
  const { timeZone } = Intl.DateTimeFormat().resolvedOptions();
  const formatted = formatFieldValue(field, value, { timeZone, language: valuesLanguage });
  if (formatted !== undefined) return formatted;
  if (field.type === 'checkbox') return value === true ? '✔' : '';
  if (Array.isArray(value)) return value.map(String).join(', ');
  return String(value);
}
