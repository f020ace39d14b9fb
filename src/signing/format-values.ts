/**
 * The one place where date and number values are read and written (issue 15): how a value sent
 * over the API or from the signing form is parsed and stored, and how a stored value reads on the
 * documents, in the audit log and on the signing page. Pure functions (Intl only, no PDF, no
 * database), so the signing page's bundle uses them too.
 *
 * DocuSeal's rules, read from its code (docusealco/docuseal):
 * - parsing: lib/submitters/normalize_values.rb (`normalize_value`, `normalize_date*`) and
 *   lib/time_utils.rb (`format_with_time?`, `month_only_format?`, `parse_date_string`);
 * - storing: a date `YYYY-MM-DD`, a month `YYYY-MM` (month-only formats), an instant as ISO 8601
 *   UTC (formats with a time), `{{date}}` kept until completion; a number as an integer when it
 *   is whole, else a float (`(value.to_f % 1).zero? ? value.to_i : value.to_f`);
 * - formatting: TimeUtils.format_date_string and NumberUtils.format_number, called by
 *   lib/submissions/generate_result_attachments.rb and generate_audit_trail.rb with the
 *   account's locale and time zone (reference/docuseal-behaviour.md §11).
 * Where Signet differs (docs/compatibility.md "Value types"): a value that cannot be read is
 * refused (DocuSeal keeps a date as given and reads a number's leading digits, `"abc".to_f` = 0),
 * and a number written with its format's separators (`1.234,5` for `dot`) is read with them
 * (DocuSeal's `to_f` stops at the first comma).
 *
 * The signer's language (issue 24; src/i18n/signer-language.ts): given as `language` (a code of
 * src/i18n/languages.ts), it names the months (`MMM`, `MMMM`), gives a date without a format of its
 * own the language's numeric order and separators (`28.11.2026` in de, `2026/11/28` in ja; English
 * keeps DocuSeal's `DD/MM/YYYY`), and a number without a format the language's decimal separator
 * (`1234,5` in de). A field's own format still wins. Dates and month names come from Intl (CLDR),
 * with Latin digits, as DocuSeal draws them.
 */

/** DocuSeal's default display format; `MM/DD/YYYY` for US locales (TimeUtils::DEFAULT_DATE_FORMAT). */
export const DEFAULT_DATE_FORMAT = 'DD/MM/YYYY';
export const DEFAULT_DATE_FORMAT_US = 'MM/DD/YYYY';

/** The value DocuSeal keeps for "today" until the documents are produced (§11, `datenow`). */
export const TODAY_PLACEHOLDER = '{{date}}';

/** TimeUtils::TOKEN_REGEX, longest tokens first so `MMMM` is not read as `MM` + `MM`. */
const DATE_TOKENS = /YYYY|YYY|YY|MMMM|MMM|MM|M|DD|D|HH|H|hh|h|mm|m|ss|s|A|a|z/g;

/** A value that cannot be read as its field's type and format; `message` says what was expected. */
export class UnparsableValue extends Error {}

/** What a date field stores, by its format (date_step.vue `formatType`, TimeUtils). */
export type DateKind = 'date' | 'month' | 'datetime';

/**
 * The kind of value a date `format` stores: `datetime` when it has a time token (`H h A a s z`,
 * TimeUtils.format_with_time?), `month` when it is given and has no day (`D d`) nor time token
 * (month_only_format?), else `date`.
 */
export function dateKind(format: unknown): DateKind {
  const text = typeof format === 'string' ? format : '';
  if (/[HhAasz]/.test(text)) return 'datetime';
  if (text !== '' && !/[DdHhAasz]/.test(text)) return 'month';
  return 'date';
}

/** A format as DocuSeal applies it: upper-cased unless it has a time (TimeUtils `format.upcase`). */
function effectiveFormat(format: string): string {
  return /[HhAasz]/.test(format) ? format : format.toUpperCase();
}

const MONTH_NAMES = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];

/** 1..12 for an English month name or its first three letters (`Sept` too), else 0. */
function monthNumber(name: string): number {
  const text = name.toLowerCase().replace(/\.$/, '');
  if (text.length < 3) return 0;
  const index = MONTH_NAMES.findIndex((m) => m.startsWith(text) || (text === 'sept' && m === 'september'));
  return index + 1;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function isDay(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

interface ReadDate {
  year: number;
  month: number;
  day: number;
  /** Set when the text had a time: the instant (UTC milliseconds). */
  instant?: number;
}

/**
 * Ruby's `Date.strptime` / `Time.zone.strptime` (in UTC, DocuSeal's `Time.zone`) with a
 * DocuSeal format (TimeUtils.parse_date_string): numbers of one or two digits where the format has
 * `D`/`DD`/`M`/`MM`/…, four-digit years, English month names or their abbreviations for `MMM`/`MMMM`,
 * `AM`/`PM` for `A`/`a`, `Z` or an offset for `z`; spaces match any run of spaces. Null when the
 * text does not have the format's shape or is no real day.
 */
function strptime(text: string, format: string): ReadDate | null {
  const pattern = effectiveFormat(format);
  const tokens: string[] = [];
  let source = '';
  let last = 0;
  for (const match of pattern.matchAll(DATE_TOKENS)) {
    source += literal(pattern.slice(last, match.index));
    last = match.index + match[0].length;
    tokens.push(match[0]);
    source += TOKEN_PATTERNS[match[0]] ?? '';
  }
  source += literal(pattern.slice(last));
  const found = new RegExp(`^${source}$`, 'i').exec(text.trim());
  if (!found) return null;
  const now = new Date();
  let [year, month, day, hour, minute, second, offset] = [now.getUTCFullYear(), 1, 1, 0, 0, 0, 0];
  let meridiem: string | undefined;
  for (const [i, token] of tokens.entries()) {
    const value = found[i + 1]!;
    if (token.startsWith('YYY')) year = Number(value);
    else if (token === 'YY') year = Number(value) + (Number(value) < 69 ? 2000 : 1900);
    else if (token === 'MMMM' || token === 'MMM') month = monthNumber(value);
    else if (token === 'MM' || token === 'M') month = Number(value);
    else if (token === 'DD' || token === 'D') day = Number(value);
    else if (/^[Hh]/.test(token)) hour = Number(value);
    else if (token.startsWith('m')) minute = Number(value);
    else if (token.startsWith('s')) second = Number(value);
    else if (token === 'A' || token === 'a') meridiem = value.toLowerCase();
    else if (token === 'z') offset = zoneOffsetMinutes(value);
  }
  if (meridiem) {
    if (hour < 1 || hour > 12) return null;
    hour = (hour % 12) + (meridiem.startsWith('p') ? 12 : 0);
  }
  if (!isDay(year, month, day) || hour > 23 || minute > 59 || second > 59) return null;
  const instant = Date.UTC(year, month - 1, day, hour, minute, second) - offset * 60_000;
  return { year, month, day, instant };
}

const TOKEN_PATTERNS: Record<string, string> = {
  YYYY: '(\\d{4})',
  YYY: '(\\d{4})',
  YY: '(\\d{2})',
  MMMM: '([a-z]{3,9}\\.?)',
  MMM: '([a-z]{3,9}\\.?)',
  MM: '(\\d{1,2})',
  M: '(\\d{1,2})',
  DD: '(\\d{1,2})',
  D: '(\\d{1,2})',
  HH: '(\\d{1,2})',
  H: '(\\d{1,2})',
  hh: '(\\d{1,2})',
  h: '(\\d{1,2})',
  mm: '(\\d{1,2})',
  m: '(\\d{1,2})',
  ss: '(\\d{1,2})',
  s: '(\\d{1,2})',
  A: '([ap]\\.?m\\.?)',
  a: '([ap]\\.?m\\.?)',
  z: '(Z|UTC|GMT|[+-]\\d{2}:?\\d{2})',
};

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const literal = (text: string) => escapeRegExp(text).replace(/\s+/g, '\\s+');

function zoneOffsetMinutes(zone: string): number {
  const match = /^([+-])(\d{2}):?(\d{2})$/.exec(zone);
  return match ? (match[1] === '-' ? -1 : 1) * (Number(match[2]) * 60 + Number(match[3])) : 0;
}

/**
 * The forms of Ruby's lenient `Date.parse` that DocuSeal's values use (normalize_date's fallback
 * and format_date_string): ISO `YYYY-MM-DD` (a time after it is ignored, as Date.parse does),
 * `YYYY/MM/DD`, `YYYY.MM.DD`, `YYYYMMDD`, day first `DD/MM/YYYY`, `DD.MM.YYYY`, `DD-MM-YYYY` (Ruby
 * reads numeric dates day first), and English month names: `March 5, 2024`, `5 Mar 2024`,
 * `Tue, 5 March 2024`, `5-Mar-2024`. Null for anything else (Ruby guesses more; Signet refuses).
 */
function rubyDateParse(text: string): ReadDate | null {
  const t = text.trim();
  const day = (y: string, m: string | number, d: string) => {
    const [year, month, date] = [Number(y), Number(m), Number(d)];
    return isDay(year, month, date) ? { year, month, day: date } : null;
  };
  let m = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T\s].*)?$/.exec(t);
  if (m) return day(m[1]!, m[2]!, m[3]!);
  m = /^(\d{4})[/.](\d{1,2})[/.](\d{1,2})$/.exec(t) ?? /^(\d{4})(\d{2})(\d{2})$/.exec(t);
  if (m) return day(m[1]!, m[2]!, m[3]!);
  m = /^(\d{1,2})([/.-])(\d{1,2})\2(\d{4})$/.exec(t);
  if (m) return day(m[4]!, m[3]!, m[1]!);
  const words = t
    .replace(/^(mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+/i, '')
    .replace(/(\d)(st|nd|rd|th)\b/gi, '$1')
    .replace(/,/g, ' ')
    .trim();
  m = /^(\d{1,2})[\s-]+([a-z]{3,9}\.?)[\s-]+(\d{4})$/i.exec(words);
  if (m && monthNumber(m[2]!)) return day(m[3]!, monthNumber(m[2]!), m[1]!);
  m = /^([a-z]{3,9}\.?)[\s-]+(\d{1,2})[\s-]+(\d{4})$/i.exec(words);
  if (m && monthNumber(m[1]!)) return day(m[3]!, monthNumber(m[1]!), m[2]!);
  return null;
}

/** Ruby's `Time.iso8601` (a date, a `T`, a time, optional fraction and zone; no zone = UTC here). */
function iso8601Instant(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(text.trim());
  if (!m || !isDay(Number(m[1]), Number(m[2]), Number(m[3]))) return null;
  if (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59) return null;
  const utc = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0));
  return utc + Math.round(Number(m[7] ?? 0) * 1000) - zoneOffsetMinutes(m[8] && m[8] !== 'Z' ? m[8] : '') * 60_000;
}

/** `value.to_s.first(10).to_i`: unix seconds, also when given in milliseconds (the first ten digits). */
const unixSeconds = (n: number) => Number(String(Math.trunc(n)).slice(0, Math.trunc(n) < 0 ? 11 : 10));

/** Ruby's `Time#utc.iso8601`: `2024-03-05T10:00:00Z`, whole seconds. */
const isoUtc = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/**
 * A date value as DocuSeal stores it (normalize_values.rb `normalize_date`), by the field's
 * `preferences.format`:
 * - a format with a time (`HH:mm`, `h:mm A`, …): an ISO 8601 date-time (any offset, or none =
 *   UTC), unix seconds, or text in the format read in UTC → `"2024-03-05T14:30:00Z"`;
 * - a month-only format (`MM/YYYY`, `MMMM YYYY`): `"YYYY-MM"` as is, unix seconds, or text in the
 *   format → `"2024-03"`;
 * - otherwise: unix seconds (their UTC day), text with the format's shape read with it (`05.03.2024`
 *   for `DD.MM.YYYY`, also `5.3.2024`), else an ISO date or another form Ruby's `Date.parse` reads
 *   (rubyDateParse) → `"2024-03-05"`.
 * `"{{date}}"` is kept (the completion date replaces it); blank text or null → null (DocuSeal's
 * `return nil if value.blank?`).
 * @throws UnparsableValue when the value is none of these (DocuSeal would store it as given)
 */
export function parseDateInput(raw: unknown, format: unknown): string | null {
  if (raw === null || raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return null;
  if (raw === TODAY_PLACEHOLDER) return raw;
  const pattern = typeof format === 'string' ? format : '';
  const kind = dateKind(pattern);
  const fail = (): never => {
    const shown = pattern ? `${effectiveFormat(pattern)} or ` : '';
    const expected = {
      datetime: `${shown}an ISO 8601 date-time (YYYY-MM-DDTHH:MM:SSZ)`,
      month: `${shown}YYYY-MM`,
      date: `${shown}YYYY-MM-DD`,
    }[kind];
    throw new UnparsableValue(`expected a date in ${expected}`);
  };
  if (typeof raw === 'number') {
    if (!Number.isInteger(raw)) fail();
    const ms = unixSeconds(raw) * 1000;
    if (!Number.isFinite(new Date(ms).getTime())) fail();
    if (kind === 'datetime') return isoUtc(ms);
    const iso = new Date(ms).toISOString();
    return kind === 'month' ? iso.slice(0, 7) : iso.slice(0, 10);
  }
  if (typeof raw !== 'string') return fail();
  const text = raw.trim();
  if (kind === 'datetime') {
    const instant = /T\d{2}:\d{2}/.test(text) ? iso8601Instant(text) : (strptime(text, pattern)?.instant ?? null);
    return instant === null ? fail() : isoUtc(instant);
  }
  if (kind === 'month') {
    const month = /^(\d{4})-(\d{2})$/.exec(text);
    if (month) return Number(month[2]) >= 1 && Number(month[2]) <= 12 ? text : fail();
    const read = strptime(text, pattern);
    return read ? `${pad(read.year, 4)}-${pad(read.month)}` : fail();
  }
  // The shape test is DocuSeal's (`value.gsub(/\w/, '0') == format.gsub(/\w/, '0')`), widened to
  // one-digit days and months: a value in the field's format is read with it, not guessed.
  // A value with exactly the format's shape that is no real day is not guessed at either.
  const shaped = pattern !== '' && text.replace(/\w/g, '0') === pattern.replace(/\w/g, '0');
  const read = (pattern ? strptime(text, pattern) : null) ?? (shaped ? null : rubyDateParse(text));
  return read ? `${pad(read.year, 4)}-${pad(read.month)}-${pad(read.day)}` : fail();
}

/**
 * How a value is written: `timeZone` (IANA) for date-times and `{{date}}`, `now` for `{{date}}`,
 * `language` (a code of src/i18n/languages.ts: month names, the default date order, the decimal
 * separator of numbers without a format) or, without it, `locale` (BCP 47: month names, and
 * `MM/DD/YYYY` as the default date format when it ends in `US`).
 */
export interface FormatOptions {
  timeZone?: string;
  now?: Date;
  language?: string;
  locale?: string;
}

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
 * Formats a stored date value with a field's `preferences.format`, as DocuSeal's
 * TimeUtils.format_date_string: the format is upper-cased unless it has a time (`dd/mm/yyyy`
 * reads as `DD/MM/YYYY`); tokens `D DD M MM MMM MMMM YY YYYY H HH h hh m mm s ss A a z` (`YYY`
 * reads as `YYYY`), other characters kept. Without a format: the `language`'s numeric date
 * (languageDateFormat), else `DD/MM/YYYY`, or `MM/DD/YYYY` when `locale` ends in `US`. Month names
 * follow `language`, else `locale` (default `en`), in the form a date uses (Polish "listopada",
 * not "listopad").
 *
 * Stored values: with a time format, an ISO 8601 date-time (or a bare `YYYY-MM-DD`, its midnight
 * UTC, as Ruby's `Time.iso8601`) is shown in `timeZone`; with a date format, `"YYYY-MM"` is its
 * first day and a date (ISO, also the date of a date-time, or what Ruby's `Date.parse` reads) is
 * drawn as is whatever the time zone. A number (unix seconds) is an instant in `timeZone`;
 * `"{{date}}"` is `now` in `timeZone`. Anything else is returned unchanged (DocuSeal draws
 * unparsable dates as given).
 *
 * Throws RangeError from Intl for an unknown `timeZone` (callers check it once up front).
 */
export function formatDate(value: unknown, format: string | undefined, options: FormatOptions = {}): string {
  const timeZone = options.timeZone ?? 'UTC';
  const locale = options.language ?? options.locale ?? 'en';
  const pattern =
    format && format.trim() !== ''
      ? effectiveFormat(format)
      : options.language
        ? languageDateFormat(options.language)
        : locale.endsWith('US')
          ? DEFAULT_DATE_FORMAT_US
          : DEFAULT_DATE_FORMAT;
  const parts = readStoredDate(value, dateKind(pattern) === 'datetime', timeZone, options.now ?? new Date());
  if (!parts) return String(value);
  const hour12 = parts.hour % 12 === 0 ? 12 : parts.hour % 12;
  const monthName = (style: 'long' | 'short') => monthNameIn(locale, parts.month, style);
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

/**
 * A month's name in `locale` as a date writes it: the month part of Intl's day-and-month form
 * (genitive where the language has one: Polish "listopada", Russian "ноября"), or the name alone
 * when that part is no word (Japanese "11" beside "月", Czech and Finnish short months as numbers).
 */
function monthNameIn(locale: string, month: number, style: 'long' | 'short'): string {
  const date = new Date(Date.UTC(2000, month - 1, 15));
  const inDate = new Intl.DateTimeFormat(locale, { day: 'numeric', month: style, timeZone: 'UTC' })
    .formatToParts(date)
    .find((part) => part.type === 'month')?.value;
  return inDate && /\p{L}/u.test(inDate)
    ? inDate
    : new Intl.DateTimeFormat(locale, { month: style, timeZone: 'UTC' }).format(date);
}

/**
 * Intl's locale for a language's dates: English as DocuSeal writes it outside the US (its
 * `en-XX` → `en-GB`, `DD/MM/YYYY`); the others as they are.
 */
const DATE_LOCALES: Readonly<Record<string, string>> = { en: 'en-GB' };
/** Direction marks Intl puts around date parts in right-to-left languages (the PDF and the form lay text out). */
const BIDI_MARKS = /[\u200e\u200f\u061c]/g;
const languageDateFormats = new Map<string, string>();

/**
 * A language's numeric date as a format of formatDate's tokens, from Intl (CLDR's short date with
 * a four-digit year and two-digit day and month): `DD/MM/YYYY` (en, es, fr, it, pt, ar),
 * `DD.MM.YYYY` (de, pl, ru, uk, tr, he, da, nb, fi, ro), `DD. MM. YYYY` (cs), `DD-MM-YYYY` (nl),
 * `YYYY-MM-DD` (sv), `YYYY/MM/DD` (ja, zh), `YYYY. MM. DD.` (ko). `DD/MM/YYYY` for a language Intl
 * does not know or whose separators hold letters.
 * @param language a code of src/i18n/languages.ts
 */
export function languageDateFormat(language: string): string {
  let found = languageDateFormats.get(language);
  if (found === undefined) {
    found = DEFAULT_DATE_FORMAT;
    try {
      const parts = new Intl.DateTimeFormat(`${DATE_LOCALES[language] ?? language}-u-nu-latn`, {
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        timeZone: 'UTC',
      }).formatToParts(new Date(Date.UTC(2026, 10, 28)));
      const tokens: Partial<Record<Intl.DateTimeFormatPartTypes, string>> = { year: 'YYYY', month: 'MM', day: 'DD' };
      const pattern = parts
        .map((part) => (part.type === 'literal' ? part.value.replace(BIDI_MARKS, '') : (tokens[part.type] ?? '?')))
        .join('')
        .trim();
      const literals = pattern.replace(/YYYY|MM|DD/g, '');
      if (/^[^\p{L}\p{N}?]*$/u.test(literals) && (pattern.match(/YYYY|MM|DD/g) ?? []).length === 3) found = pattern;
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
    }
    languageDateFormats.set(language, found);
  }
  return found;
}

/** A stored date value read as format_date_string reads it (see formatDate); null when it cannot be. */
function readStoredDate(value: unknown, withTime: boolean, timeZone: string, now: Date): DateParts | null {
  if (typeof value === 'number' && Number.isFinite(value))
    return partsInZone(new Date(unixSeconds(value) * 1000), timeZone);
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (text === TODAY_PLACEHOLDER) return partsInZone(now, timeZone);
  if (withTime) {
    const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
    const instant =
      day && isDay(Number(day[1]), Number(day[2]), Number(day[3]))
        ? Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3]))
        : iso8601Instant(text);
    return instant === null ? null : partsInZone(new Date(instant), timeZone);
  }
  const month = /^(\d{4})-(\d{2})$/.exec(text);
  const read = month ? { year: Number(month[1]), month: Number(month[2]), day: 1 } : rubyDateParse(text);
  if (!read || read.month < 1 || read.month > 12) return null;
  const instant = new Date(Date.UTC(read.year, read.month - 1, read.day, 12));
  return { ...read, hour: 0, minute: 0, second: 0, instant };
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
    maximumFractionDigits: 2,
  }).format(n);

/** NumberUtils.format_number, format by format (the Rails locales `en`, `de`, `fr`). */
const NUMBER_FORMATS: Record<string, (n: number) => string> = {
  comma: (n) => grouped('en-US', n),
  dot: (n) => grouped('de-DE', n),
  space: (n) => grouped('fr-FR', n),
  usd: (n) => currency('en-US', 'USD', n),
  eur: (n) => currency('fr-FR', 'EUR', n),
  gbp: (n) => currency('en-GB', 'GBP', n),
  percent: (n) => `${String(n)}%`,
  percent_space: (n) => `${String(n).replace('.', ',')} %`,
};

/**
 * Formats a number value with a field's `preferences.format`, as DocuSeal's NumberUtils.format_number:
 * `comma` 1,234.5 (`number_with_delimiter`, locale en), `dot` 1.234,5 (de), `space` 1 234,5 (fr),
 * each keeping every decimal of the stored number; `usd` $1,234.50, `eur` 1 234,50 €, `gbp`
 * £1,234.50 (`number_to_currency`, `precision: 2`: rounded to cents); `percent` 12.5% and
 * `percent_space` 12,5 % (the number as Ruby writes it, no grouping; `percent_space` with a
 * decimal comma, DocuSeal's `tr('.', ',')`). Without a known format, or for a value that is not a
 * finite number (numeric strings are accepted), the value is returned as its string. The narrow
 * and ordinary no-break spaces Intl puts in fr output become plain spaces (DocuSeal draws U+00A0
 * as a space), so every font has the glyph.
 */
export function formatNumber(
  value: unknown,
  format: string | undefined,
  options: Pick<FormatOptions, 'language'> = {},
): string {
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  const formatter = format ? NUMBER_FORMATS[format] : undefined;
  if (!formatter || !Number.isFinite(n)) {
    // Without a format of its own: as given, with the language's decimal separator.
    const separator = options.language && Number.isFinite(n) ? decimalSeparator(options.language) : '.';
    return separator === '.' ? String(value) : String(value).replace('.', separator);
  }
  return formatter(n).replace(/[\u00a0\u202f]/g, ' ');
}

const decimalSeparators = new Map<string, string>();

/** The decimal separator of a language with Latin digits (Intl): `.` for en, ja, he; `,` for de, fr, ru. */
function decimalSeparator(language: string): string {
  let found = decimalSeparators.get(language);
  if (found === undefined) {
    found = '.';
    try {
      found =
        new Intl.NumberFormat(`${language}-u-nu-latn`).formatToParts(1.5).find((part) => part.type === 'decimal')
          ?.value ?? '.';
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
    }
    decimalSeparators.set(language, found);
  }
  return found;
}

/** Each number format's separators as DocuSeal draws it (NumberUtils::FORMAT_LOCALES, the Rails locales). */
const SEPARATORS: Record<string, { decimal: string; group: string }> = {
  comma: { decimal: '.', group: ',' },
  usd: { decimal: '.', group: ',' },
  gbp: { decimal: '.', group: ',' },
  dot: { decimal: ',', group: '.' },
  space: { decimal: ',', group: ' ' },
  eur: { decimal: ',', group: ' ' },
  percent: { decimal: '.', group: '' },
  percent_space: { decimal: ',', group: '' },
};

/** A plain machine number (`1234.5`, `-0.25`, `1e3`): what JSON clients and Ruby's `to_f` read. */
const PLAIN_NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;

/**
 * A number value as DocuSeal stores it (normalize_values.rb: `(value.to_f % 1).zero? ? value.to_i
 * : value.to_f`): an integer when whole, else a float. A JSON number is taken as is; text may be
 * written as the field's `preferences.format` draws it — `1,234.5` (`comma`, and without a
 * format), `$1,234.50` (`usd`), `£1,234.50` (`gbp`), `1.234,5` (`dot`), `1 234,5` (`space`),
 * `1 234,50 €` (`eur`), `12.5%` (`percent`), `12,5 %` (`percent_space`); thousands separators
 * only between groups of three digits — or as a plain number (`1234.5`). Blank text or null →
 * null.
 * @throws UnparsableValue for anything else ("abc", "12,5" without a format, NaN, Infinity)
 */
export function parseNumberInput(raw: unknown, format: unknown): number | null {
  if (raw === null || raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return null;
  const name = typeof format === 'string' && SEPARATORS[format] ? format : 'comma';
  const fail = (): never => {
    const example = formatNumber(1234.5, name);
    throw new UnparsableValue(`expected a number such as ${example} or 1234.5`);
  };
  if (typeof raw === 'number') return Number.isFinite(raw) ? raw : fail();
  if (typeof raw !== 'string') return fail();
  const { decimal, group } = SEPARATORS[name]!;
  // The unit and sign as the formats write them: "-$1,234.50", "$-1", "1 234,50 €", "12 %".
  let text = raw.replace(/[\u00a0\u202f]/g, ' ').trim();
  let sign = '';
  if (/^[+-]/.test(text)) [sign, text] = [text[0]!, text.slice(1).trim()];
  text = text.replace(/^[$£€]\s*/, '').replace(/\s*[€%]$/, '');
  if (sign === '' && /^[+-]/.test(text)) [sign, text] = [text[0]!, text.slice(1)];
  let n = Number.NaN;
  const digits = group ? `\\d{1,3}(?:${escapeRegExp(group)}\\d{3})+|\\d+` : '\\d+';
  const written = new RegExp(`^(${digits})(?:${escapeRegExp(decimal)}(\\d+))?$`).exec(text);
  if (written) n = Number(`${written[1]!.split(group || '\u0000').join('')}.${written[2] ?? '0'}`);
  else if (PLAIN_NUMBER.test(text)) n = Number(text);
  if (!Number.isFinite(n)) return fail();
  n = sign === '-' ? -n : n;
  return Object.is(n, -0) ? 0 : n;
}

/**
 * A date or number value of `field` as DocuSeal stores it (parseDateInput, parseNumberInput);
 * other types' values are returned unchanged.
 * @throws UnparsableValue as those do
 */
export function parseFieldValue(field: { type: string; preferences?: { format?: unknown } | null }, raw: unknown) {
  if (field.type === 'date') return parseDateInput(raw, field.preferences?.format);
  if (field.type === 'number') return parseNumberInput(raw, field.preferences?.format);
  return raw;
}

/**
 * The text a date or number value of `field` reads as — the same on the documents
 * (src/signing/draw-values.ts), in the audit log (audit-log-values.ts) and on the signing page —
 * with the field's `preferences.format` (formatDate in `options.timeZone` and `options.language`
 * or `options.locale`, formatNumber with `options.language`); undefined for the other types. An
 * unknown time zone falls back to UTC (the documents check it once up front; the audit log prints
 * times in UTC then too).
 */
export function formatFieldValue(
  field: { type: string; preferences?: { format?: unknown } | null },
  value: unknown,
  options: FormatOptions = {},
): string | undefined {
  const format = typeof field.preferences?.format === 'string' ? field.preferences.format : undefined;
  if (field.type === 'number') return formatNumber(value, format, options);
  if (field.type !== 'date') return undefined;
  try {
    return formatDate(value, format, options);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return formatDate(value, format, { ...options, timeZone: 'UTC' });
  }
}

/**
 * What a `{{date}}` value becomes when its party completes (DocuSeal's TimeUtils.current_date_value,
 * called by SubmitValues.replace_current_date_placeholders on the form, the API's `completed: true`
 * and PUT /submitters): for a format with a time the instant `now` in UTC (`2026-11-25T10:24:00Z`),
 * for a month-only format the month in `timeZone` (`2026-11`), else the day in `timeZone`
 * (`2026-11-25`). An unknown `timeZone` counts as UTC.
 */
export function currentDateValue(format: unknown, timeZone: string, now: Date): string {
  const kind = dateKind(format);
  if (kind === 'datetime') return isoUtc(now.getTime());
  let parts: DateParts;
  try {
    parts = partsInZone(now, timeZone);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    parts = partsInZone(now, 'UTC');
  }
  const month = `${pad(parts.year, 4)}-${pad(parts.month)}`;
  return kind === 'month' ? month : `${month}-${pad(parts.day)}`;
}

/**
 * A completing party's values with each `{{date}}` replaced by currentDateValue for its field's
 * format (SubmitValues.replace_current_date_placeholders: every value equal to `{{date}}`; a key
 * that names no field gets the plain date). Returns a new object; other values are kept.
 */
export function replaceTodayPlaceholders(
  fields: readonly { uuid: string; preferences?: { format?: unknown } | null }[],
  values: Record<string, unknown>,
  timeZone: string,
  now: Date,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...values };
  for (const [uuid, value] of Object.entries(values)) {
    if (value !== TODAY_PLACEHOLDER) continue;
    out[uuid] = currentDateValue(fields.find((f) => f.uuid === uuid)?.preferences?.format, timeZone, now);
  }
  return out;
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
