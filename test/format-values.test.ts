/**
 * Date and number values read and drawn as DocuSeal does (src/signing/format-values.ts, issue 15):
 * a table of formats × inputs → the stored value and the text the documents and the audit log show.
 * The expected values are DocuSeal's rules as read from its code: lib/submitters/normalize_values.rb
 * (`normalize_value`, `normalize_date`, `normalize_date_time`, `normalize_date_month`),
 * lib/time_utils.rb (`parse_date_string`, `format_date_string`) and lib/number_utils.rb
 * (`format_number`: Rails `number_with_delimiter` / `number_to_currency(precision: 2)` in the
 * `en`, `de`, `fr` locales). Where Signet refuses what DocuSeal would keep as given, the row says so.
 */
import { describe, expect, it } from 'vitest';
import {
  currentDateValue,
  dateKind,
  formatDate,
  formatNumber,
  parseDateInput,
  parseNumberInput,
  replaceTodayPlaceholders,
  UnparsableValue,
} from '../src/signing/format-values.ts';

// [format, input, stored, drawn]
const DATES: [string | undefined, unknown, string, string][] = [
  // In the field's format (DocuSeal: the value has the format's shape → parse_date_string).
  ['DD/MM/YYYY', '05/03/2024', '2024-03-05', '05/03/2024'],
  ['MM/DD/YYYY', '03/05/2024', '2024-03-05', '03/05/2024'],
  ['DD.MM.YYYY', '05.03.2024', '2024-03-05', '05.03.2024'],
  ['YYYY-MM-DD', '2024-03-05', '2024-03-05', '2024-03-05'],
  ['MMMM D, YYYY', 'March 5, 2024', '2024-03-05', 'March 5, 2024'],
  ['D MMM YYYY', '5 Mar 2024', '2024-03-05', '5 Mar 2024'],
  ['DD/MM/YY', '05/03/24', '2024-03-05', '05/03/24'],
  // One-digit day and month in a two-digit format (strptime's %d and %m take them).
  ['DD/MM/YYYY', '5/3/2024', '2024-03-05', '05/03/2024'],
  // ISO whatever the format (Date.parse).
  ['MM/DD/YYYY', '2024-03-05', '2024-03-05', '03/05/2024'],
  ['DD.MM.YYYY', '2024-03-05T10:00:00Z', '2024-03-05', '05.03.2024'],
  // Not the format's shape: Ruby's Date.parse reads numbers day first.
  ['MM/DD/YYYY', '05.03.2024', '2024-03-05', '03/05/2024'],
  [undefined, '05/03/2024', '2024-03-05', '05/03/2024'],
  // A lower-case format reads as upper case (TimeUtils `format.upcase` without a time).
  ['dd.mm.yyyy', '05.03.2024', '2024-03-05', '05.03.2024'],
  // Unix seconds (an Integer): their day in UTC (DocuSeal's Time.zone).
  ['DD/MM/YYYY', 1709640000, '2024-03-05', '05/03/2024'],
  // Month-only formats store YYYY-MM.
  ['MM/YYYY', '03/2024', '2024-03', '03/2024'],
  ['MMMM YYYY', 'March 2024', '2024-03', 'March 2024'],
  ['MM/YYYY', '2024-03', '2024-03', '03/2024'],
  // Formats with a time store the instant in UTC (`Time#utc.iso8601`), drawn in the account's zone (UTC here).
  ['DD/MM/YYYY HH:mm', '05/03/2024 14:30', '2024-03-05T14:30:00Z', '05/03/2024 14:30'],
  ['DD/MM/YYYY HH:mm', '2024-03-05T14:30:00+01:00', '2024-03-05T13:30:00Z', '05/03/2024 13:30'],
  ['MM/DD/YYYY h:mm A', '03/05/2024 2:30 PM', '2024-03-05T14:30:00Z', '03/05/2024 2:30 PM'],
  ['DD/MM/YYYY HH:mm', 1709647200, '2024-03-05T14:00:00Z', '05/03/2024 14:00'],
  // {{date}} is kept until completion.
  ['DD/MM/YYYY', '{{date}}', '{{date}}', '09/06/2025'],
];

describe('date values', () => {
  const now = new Date('2025-06-09T12:00:00Z');
  it.each(DATES)('%s: %j is stored as %j and drawn as %j', (format, input, stored, drawn) => {
    expect(parseDateInput(input, format)).toBe(stored);
    expect(formatDate(stored, format, { now })).toBe(drawn);
  });

  it('refuses what is no date in the format or ISO (DocuSeal keeps it as given), and blank is null', () => {
    for (const [format, input] of [
      ['DD/MM/YYYY', '31/02/2024'],
      ['DD/MM/YYYY', 'next Tuesday'],
      ['MM/DD/YYYY', '13/05/2024'],
      ['MM/YYYY', '2024-13'],
      ['DD/MM/YYYY HH:mm', '05/03/2024'],
      ['DD/MM/YYYY HH:mm', '2024-03-05T25:00:00Z'],
      ['DD/MM/YYYY', 1.5],
      ['DD/MM/YYYY', true],
    ] as [string, unknown][]) {
      expect(() => parseDateInput(input, format), `${format} ${String(input)}`).toThrow(UnparsableValue);
    }
    expect(() => parseDateInput('31/02/2024', 'DD/MM/YYYY')).toThrow('expected a date in DD/MM/YYYY or YYYY-MM-DD');
    expect(parseDateInput('', 'DD/MM/YYYY')).toBeNull();
    expect(parseDateInput('  ', undefined)).toBeNull();
  });

  it('stores {{date}} at completion as current_date_value: the instant in UTC, else month or day in the zone', () => {
    const now = new Date('2025-06-09T20:30:00Z'); // 10 June in Tokyo
    expect(currentDateValue('DD/MM/YYYY', 'Asia/Tokyo', now)).toBe('2025-06-10');
    expect(currentDateValue(undefined, 'UTC', now)).toBe('2025-06-09');
    expect(currentDateValue('MM/YYYY', 'Asia/Tokyo', now)).toBe('2025-06');
    expect(currentDateValue('DD/MM/YYYY HH:mm', 'Asia/Tokyo', now)).toBe('2025-06-09T20:30:00Z');
    expect(
      replaceTodayPlaceholders(
        [{ uuid: 'a', preferences: { format: 'MM/YYYY' } }],
        { a: '{{date}}', b: 'x' },
        'UTC',
        now,
      ),
    ).toEqual({ a: '2025-06', b: 'x' });
  });

  it('chooses what a format stores as DocuSeal (TimeUtils.format_with_time?, month_only_format?)', () => {
    expect([dateKind('DD/MM/YYYY'), dateKind('MM/YYYY'), dateKind('HH:mm DD/MM'), dateKind(undefined)]).toEqual([
      'date',
      'month',
      'datetime',
      'date',
    ]);
  });

  it('draws in the account locale and time zone as format_date_string', () => {
    expect(formatDate('2024-03-05T23:30:00Z', 'DD/MM/YYYY HH:mm', { timeZone: 'Asia/Tokyo' })).toBe('06/03/2024 08:30');
    // A date format takes the date of a stored date-time as written (Date.parse), not moved to the zone.
    expect(formatDate('2024-03-05T23:30:00Z', 'DD/MM/YYYY', { timeZone: 'Asia/Tokyo' })).toBe('05/03/2024');
    expect(formatDate('2024-03-05', undefined, { locale: 'en-US' })).toBe('03/05/2024');
    expect(formatDate('2024-03-05', 'D MMMM YYYY', { locale: 'de' })).toBe('5 März 2024');
  });
});

// [format, input, stored, drawn]
const NUMBERS: [string | undefined, unknown, number, string][] = [
  ['comma', '1,234.5', 1234.5, '1,234.5'],
  ['comma', 1234567.891, 1234567.891, '1,234,567.891'],
  ['dot', '1.234,5', 1234.5, '1.234,5'],
  ['dot', '1.234', 1234, '1.234'],
  ['space', '1 234,5', 1234.5, '1 234,5'],
  ['usd', '$1,234.50', 1234.5, '$1,234.50'],
  ['usd', '-$1,234.50', -1234.5, '-$1,234.50'],
  ['usd', 1234.567, 1234.567, '$1,234.57'], // number_to_currency precision: 2
  ['eur', '1 234,50 €', 1234.5, '1 234,50 €'],
  ['gbp', '£1,234.50', 1234.5, '£1,234.50'],
  ['percent', '12.5%', 12.5, '12.5%'],
  ['percent', 1234567, 1234567, '1234567%'], // "#{number}%": no grouping
  ['percent_space', '12,5 %', 12.5, '12,5 %'], // tr('.', ',')
  // The plain form always reads (what JSON clients send); whole numbers are integers (`to_i`).
  ['dot', '1234.5', 1234.5, '1.234,5'],
  [undefined, '42', 42, '42'],
  [undefined, '42.0', 42, '42'],
  [undefined, '1,234.5', 1234.5, '1234.5'],
  [undefined, '1e3', 1000, '1000'],
];

describe('number values', () => {
  it.each(NUMBERS)('%s: %j is stored as %j and drawn as %j', (format, input, stored, drawn) => {
    const value = parseNumberInput(input, format);
    expect(value).toBe(stored);
    expect(Number.isInteger(value)).toBe(Number.isInteger(stored));
    expect(formatNumber(value, format)).toBe(drawn);
  });

  it('refuses what is no number in the format (DocuSeal stores "abc".to_f = 0), and blank is null', () => {
    for (const [format, input] of [
      [undefined, 'abc'],
      [undefined, '12,5'], // a comma is a thousands separator here, and not between groups of three
      ['comma', '1,23,4'],
      ['dot', '1,2,3'],
      ['usd', '$'],
      [undefined, Number.NaN],
      [undefined, true],
    ] as [string | undefined, unknown][]) {
      expect(() => parseNumberInput(input, format), `${format} ${String(input)}`).toThrow(UnparsableValue);
    }
    expect(() => parseNumberInput('abc', 'eur')).toThrow('expected a number such as 1 234,50 € or 1234.5');
    expect(parseNumberInput('', 'usd')).toBeNull();
  });
});

describe('in the signer’s language (issue 24; `language`)', () => {
  it('a date without a format of its own is written as the language writes it; English stays DD/MM/YYYY', () => {
    const cases: [string, string][] = [
      ['en', '28/11/2026'],
      ['de', '28.11.2026'],
      ['fr', '28/11/2026'],
      ['nl', '28-11-2026'],
      ['cs', '28. 11. 2026'],
      ['sv', '2026-11-28'],
      ['ja', '2026/11/28'],
      ['ko', '2026. 11. 28.'],
      // Latin digits and no direction marks in right-to-left languages.
      ['ar', '28/11/2026'],
      ['he', '28.11.2026'],
    ];
    for (const [language, drawn] of cases)
      expect(formatDate('2026-11-28', undefined, { language }), language).toBe(drawn);
    // Without a language, as before: DocuSeal's default, US order for a US locale.
    expect(formatDate('2026-11-28', undefined)).toBe('28/11/2026');
    expect(formatDate('2026-11-28', undefined, { locale: 'en-US' })).toBe('11/28/2026');
  });

  it('a field’s own format wins; its month names are the language’s, as a date writes them', () => {
    expect(formatDate('2026-11-28', 'MM/DD/YYYY', { language: 'de' })).toBe('11/28/2026');
    expect(formatDate('2026-11-28', 'D MMMM YYYY', { language: 'de' })).toBe('28 November 2026');
    expect(formatDate('2026-03-05', 'D MMMM YYYY', { language: 'fr' })).toBe('5 mars 2026');
    // Genitive where a date takes it.
    expect(formatDate('2026-11-28', 'D MMMM YYYY', { language: 'pl' })).toBe('28 listopada 2026');
    expect(formatDate('2026-11-28', 'D MMMM YYYY', { language: 'ru' })).toBe('28 ноября 2026');
    expect(formatDate('2026-11-28', 'D MMMM YYYY', { language: 'ar' })).toBe('28 نوفمبر 2026');
    expect(formatDate('2026-03-05', 'DD MMM YYYY', { language: 'cs' })).toBe('05 bře 2026');
    expect(formatDate('2026-11-28', 'YYYY MMMM D', { language: 'ja' })).toBe('2026 11月 28');
    // A time format keeps its tokens (AM/PM as the format says).
    expect(formatDate('2026-11-28T15:04:00Z', 'DD.MM.YYYY HH:mm', { language: 'de', timeZone: 'Europe/Berlin' })).toBe(
      '28.11.2026 16:04',
    );
  });

  it('a number without a format takes the language’s decimal separator; a format of its own wins', () => {
    expect(formatNumber(1234.5, undefined, { language: 'de' })).toBe('1234,5');
    expect(formatNumber(1234.5, undefined, { language: 'fr' })).toBe('1234,5');
    expect(formatNumber(1234.5, undefined, { language: 'en' })).toBe('1234.5');
    expect(formatNumber(1234.5, undefined, { language: 'ja' })).toBe('1234.5');
    expect(formatNumber(1234.5, undefined, { language: 'ar' })).toBe('1234.5');
    expect(formatNumber(42, undefined, { language: 'de' })).toBe('42');
    expect(formatNumber(1234.5, 'comma', { language: 'de' })).toBe('1,234.5');
    expect(formatNumber('abc', undefined, { language: 'de' })).toBe('abc');
  });
});
