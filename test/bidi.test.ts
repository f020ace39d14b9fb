/**
 * The reduced Unicode Bidirectional Algorithm the audit log and the documents draw Hebrew and
 * Arabic lines with (src/i18n/bidi.ts): runs in drawing order, left to right, for the cases of
 * UAX #9 it keeps (numbers, separators, brackets, mixed scripts), and the first-strong direction.
 */
import { describe, expect, it } from 'vitest';
import { bidiRuns, firstStrongDirection } from '../src/i18n/bidi.ts';

/** The runs as "<rtl text" / ">ltr text". */
const shown = (text: string, direction: 'ltr' | 'rtl') =>
  bidiRuns(text, direction).map((run) => `${run.rtl ? '<' : '>'}${run.text}`);

describe('bidiRuns', () => {
  it('keeps a left-to-right line whole', () => {
    expect(shown('Audit Log 2026', 'ltr')).toEqual(['>Audit Log 2026']);
    expect(shown('', 'ltr')).toEqual([]);
  });

  it('puts the runs of a right-to-left line from the right, numbers and Latin words in their order', () => {
    expect(shown('עמוד 1 מתוך 12', 'rtl')).toEqual(['>12', '< מתוך ', '>1', '<עמוד ']);
    expect(shown('البريد الإلكتروني إلى ann@example.test عبر SMTP', 'rtl')).toEqual([
      '>SMTP',
      '< عبر ',
      '>ann@example.test',
      '<البريد الإلكتروني إلى ',
    ]);
    // A number's separators join it (W4); a date keeps its order.
    expect(shown('תאריך 28.11.2026', 'rtl')).toEqual(['>28.11.2026', '<תאריך ']);
  });

  it('mirrors brackets of right-to-left runs and pairs them by what they enclose (N0)', () => {
    // "(view_form)" after Hebrew: the pair takes the paragraph's direction, the word inside stays.
    expect(shown('הטופס נצפה (view_form)', 'rtl')).toEqual(['<(', '>view_form', '<הטופס נצפה )']);
    // A pair after Latin text enclosing Latin text is Latin (the ISO time after the local one).
    expect(shown('בשעה 11:15 GMT+1 (2026-11-21T10:15:30Z)', 'rtl')).toEqual([
      '>GMT+1 (2026-11-21T10:15:30Z)',
      '< ',
      '>11:15',
      '<בשעה ',
    ]);
  });

  it('reorders Hebrew inside a left-to-right line', () => {
    expect(shown('Name: שלום כהן 2026', 'ltr')).toEqual(['>Name: ', '>2026', '<שלום כהן ']);
  });
});

describe('firstStrongDirection', () => {
  it('is the direction of the first letter, digits and punctuation passed over', () => {
    expect(firstStrongDirection('28 نوفمبر 2026')).toBe('rtl');
    expect(firstStrongDirection('2026 Hello שלום')).toBe('ltr');
    expect(firstStrongDirection('+15551234567')).toBe('ltr');
    expect(firstStrongDirection('')).toBe('ltr');
  });
});
