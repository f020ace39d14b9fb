/**
 * How a stored value reads on the document: dates in a field's `format`, numbers in a field's
 * number format, masked values (reference/docuseal-behaviour.md §11, DocuSeal's submission form
 * and result documents). Pure functions, no PDF involved.
 */

/** DocuSeal's default display format; `MM/DD/YYYY` for US locales (§11). */
export const DEFAULT_DATE_FORMAT = 'DD/MM/YYYY';
export const DEFAULT_DATE_FORMAT_US = 'MM/DD/YYYY';

/** The value DocuSeal keeps for "today" until the documents are produced (§11, `datenow`). */
export const TODAY_PLACEHOLDER = '{{date}}';

/** Longest tokens first so `MMMM` is not read as `MM` + `MM`. */
const DATE_TOKENS = /YYYY|YYY|YY|MMMM|MMM|MM|M|DD|D|HH|H|hh|h|mm|m|ss|s|A|a|z/g;

interface DateParts {
  year: number;
  month: number; // 1..12
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** The instant, for the time zone's abbreviation (`z`); a date without time uses its noon UTC. */
  instant: Date;
}

/**
 * Formats a stored date value with a field's `preferences.format` (tokens `D DD M MM MMM MMMM YY
 * YYYY H HH h hh m mm s ss A a z`, §11; DocuSeal's `YYY` reads as `YYYY`; other characters are
 * kept). Without a format: `DD/MM/YYYY`, or `MM/DD/YYYY` when `locale` ends in `US` (§11).
 *
 * Stored values (§11): `"YYYY-MM-DD"` is a calendar date, drawn as is whatever the time zone;
 * `"YYYY-MM"` is a month (day 1); an ISO-8601 date-time or a number (unix seconds) is an instant,
 * shown in `timeZone`; `"{{date}}"` is `now` in `timeZone`. Anything else is returned unchanged
 * (DocuSeal draws unparsable dates as given). Month names follow `locale` (default `en`).
 *
 * Throws RangeError from Intl for an unknown `timeZone` (callers check it once up front).
 */
export function formatDate(
  value: unknown,
  format: string | undefined,
  options: { timeZone?: string; now?: Date; locale?: string } = {},
): string {
  const timeZone = options.timeZone ?? 'UTC';
  const locale = options.locale ?? 'en';
  const parts = parseDateValue(value, timeZone, options.now ?? new Date());
  if (!parts) return String(value);
  const pattern =
    format && format.trim() !== '' ? format : locale.endsWith('US') ? DEFAULT_DATE_FORMAT_US : DEFAULT_DATE_FORMAT;
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  const hour12 = parts.hour % 12 === 0 ? 12 : parts.hour % 12;
  const monthName = (style: 'long' | 'short') =>
    new Intl.DateTimeFormat(locale, { month: style, timeZone: 'UTC' }).format(
      new Date(Date.UTC(2000, parts.month - 1, 15)),
    );
  return pattern.replace(DATE_TOKENS, (token) => {
    switch (token) {
      case 'YYYY':
      case 'YYY':
        return String(parts.year);
      case 'YY':
        return pad(parts.year % 100);
      case 'MMMM':
        return monthName('long');
      case 'MMM':
        return monthName('short');
      case 'MM':
        return pad(parts.month);
      case 'M':
        return String(parts.month);
      case 'DD':
        return pad(parts.day);
      case 'D':
        return String(parts.day);
      case 'HH':
        return pad(parts.hour);
      case 'H':
        return String(parts.hour);
      case 'hh':
        return pad(hour12);
      case 'h':
        return String(hour12);
      case 'mm':
        return pad(parts.minute);
      case 'm':
        return String(parts.minute);
      case 'ss':
        return pad(parts.second);
      case 's':
        return String(parts.second);
      case 'A':
        return parts.hour < 12 ? 'AM' : 'PM';
      case 'a':
        return parts.hour < 12 ? 'am' : 'pm';
      case 'z':
        return timeZoneAbbreviation(parts.instant, timeZone);
      default:
        return token;
    }
  });
}

function parseDateValue(value: unknown, timeZone: string, now: Date): DateParts | null {
  if (typeof value === 'number' && Number.isFinite(value)) return partsInZone(new Date(value * 1000), timeZone);
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (text === TODAY_PLACEHOLDER) return partsInZone(now, timeZone);
  const calendar = /^(\d{4})-(\d{2})(?:-(\d{2}))?$/.exec(text);
  if (calendar) {
    const [year, month, day] = [Number(calendar[1]), Number(calendar[2]), calendar[3] ? Number(calendar[3]) : 1];
    if (month < 1 || month > 12 || day < 1 || day > 31) return null;
    return { year, month, day, hour: 0, minute: 0, second: 0, instant: new Date(Date.UTC(year, month - 1, day, 12)) };
  }
  // A date-time (ISO 8601 with a time part): an instant shown in the time zone.
  if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(text)) {
    const instant = new Date(text);
    if (!Number.isNaN(instant.getTime())) return partsInZone(instant, timeZone);
  }
  return null;
}

function partsInZone(instant: Date, timeZone: string): DateParts {
  const formatter = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const get = (type: Intl.DateTimeFormatPartTypes) =>
    Number(formatter.formatToParts(instant).find((p) => p.type === type)?.value ?? 0);
  return {
    year: get('year'),
    month: get('month'),
    day: get('day'),
    hour: get('hour') % 24,
    minute: get('minute'),
    second: get('second'),
    instant,
  };
}

function timeZoneAbbreviation(instant: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'short' }).formatToParts(instant);
  return parts.find((p) => p.type === 'timeZoneName')?.value ?? timeZone;
}

/** Decimals of the shortest round-trip form of n (so 1.23456 keeps every digit; at most 20). */
function decimals(n: number): number {
  const text = String(Math.abs(n));
  const exponent = /e-(\d+)$/.exec(text);
  if (exponent) return Math.min(20, Number(exponent[1]) + (text.split('e')[0].split('.')[1]?.length ?? 0));
  return Math.min(20, text.split('.')[1]?.length ?? 0);
}

const grouped = (locale: string, n: number) =>
  new Intl.NumberFormat(locale, { minimumFractionDigits: decimals(n), maximumFractionDigits: decimals(n) }).format(n);
const currency = (locale: string, code: string, n: number) =>
  new Intl.NumberFormat(locale, {
    style: 'currency',
    currency: code,
    minimumFractionDigits: 2,
    maximumFractionDigits: Math.max(2, decimals(n)),
  }).format(n);

const NUMBER_FORMATS: Record<string, (n: number) => string> = {
  comma: (n) => grouped('en-US', n),
  dot: (n) => grouped('de-DE', n),
  space: (n) => grouped('fr-FR', n),
  usd: (n) => currency('en-US', 'USD', n),
  eur: (n) => currency('fr-FR', 'EUR', n),
  gbp: (n) => currency('en-GB', 'GBP', n),
  percent: (n) => `${grouped('en-US', n)}%`,
  percent_space: (n) => `${grouped('en-US', n)} %`,
};

/**
 * Formats a number value with a field's `preferences.format` (§11), as DocuSeal's form shows it:
 * `comma` 1,234.5 (en-US), `dot` 1.234,5 (de-DE), `space` 1 234,5 (fr-FR), `usd` $1,234.50,
 * `eur` 1 234,50 €, `gbp` £1,234.50; `percent` 12.5% and `percent_space` 12.5 % (the value is
 * the percentage itself, not a fraction). Every decimal of the stored number is kept (currencies
 * show at least two), as DocuSeal's server-side formatting does. Without a known format, or for a value that is not a
 * finite number (numeric strings are accepted), the value is returned as its string. The narrow
 * and ordinary no-break spaces Intl puts in fr-FR output become plain spaces (DocuSeal does the
 * same for U+00A0), so every font has the glyph.
 */
export function formatNumber(value: unknown, format: string | undefined): string {
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  const formatter = format ? NUMBER_FORMATS[format] : undefined;
  if (!formatter || !Number.isFinite(n)) return String(value);
  return formatter(n).replace(/[\u00a0\u202f]/g, ' ');
}

/** Characters a mask keeps (DocuSeal's `TextUtils::MASK_REGEXP`): spaces and - _ [ ] ( ) + ? . , */
const MASKED = /[^\s\-_[\]()+?.,]/gu;

/**
 * Applies a field's `preferences.mask` (§11): `true` replaces every character but spaces and
 * `- _ [ ] ( ) + ? . ,` with `X`; an integer N > 0 keeps the first N characters, N < 0 the last
 * |N| (when |N| is shorter than the value; otherwise, and for 0, everything is masked); absent,
 * `false` or `''` leave the value unchanged. Counts code points, so a Greek or Cyrillic value masks one X per letter.
 */
export function maskText(text: string, mask: unknown): string {
  // As DocuSeal's `mask.presence`: only absent, false and '' leave the value as it is (0 masks all).
  if (mask === undefined || mask === null || mask === false || mask === '' || mask === 'false') return text;
  const n = typeof mask === 'number' ? mask : typeof mask === 'string' && /^-?\d+$/.test(mask) ? Number(mask) : 0;
  const chars = Array.from(text);
  const hide = (s: string) => s.replace(MASKED, 'X');
  if (n !== 0 && Math.abs(n) < chars.length) {
    return n > 0
      ? chars.slice(0, n).join('') + hide(chars.slice(n).join(''))
      : hide(chars.slice(0, chars.length + n).join('')) + chars.slice(chars.length + n).join('');
  }
  return hide(text);
}
