/**
 * Text direction for what Signet writes to signers in Hebrew and Arabic (issue 24): the direction
 * of a text by its first strong character (an e-mail body given through the API), and one line
 * of text in the order it is drawn — its runs of one direction, left to right, after a reduced
 * Unicode Bidirectional Algorithm (UAX #9) — for PDFs drawn with pdf-lib, which lays out a string's
 * characters left to right in the order given (fontkit reverses a string whose script is right
 * to left as a whole, digits and Latin words inside it included).
 *
 * What is kept of UAX #9, for one line without explicit embeddings or isolates: character types
 * strong L, strong R (Hebrew, Arabic, Syriac, Thaana, N'Ko and their presentation forms), numbers
 * (European and Arabic-Indic digits: EN), separators of numbers (CS, ES) and terminators (ET),
 * neutrals; the rules W4 (a separator between two numbers joins them), W5 (terminators next to a
 * number join it), W7 (a number after strong L is L), N0 (a bracket pair takes the direction of
 * what it encloses, as BD16 pairs them), N1/N2 (neutrals between two strong types of one
 * direction take it, numbers counting as R; else the paragraph's), I1/I2 (levels), L2 (reversal
 * of runs from the highest level) and L4 (brackets mirrored at odd levels). Enough for the audit
 * log's texts: sentences of one language with names, e-mail addresses, numbers, times and hashes
 * inside. Not kept: explicit marks and isolates (LRE, RLI, …).
 *
 * Library: none. `bidi-js` would do the whole algorithm; the reduced one is a hundred lines, and
 * the audit log needs runs to draw, not a reordered string.
 */

/** A run of characters drawn in one direction. */
export interface BidiRun {
  /** The run's characters in logical order (brackets of an RTL run already mirrored). */
  text: string;
  /** True when the run is drawn right to left (an odd embedding level). */
  rtl: boolean;
}

type BidiType = 'L' | 'R' | 'EN' | 'CS' | 'ES' | 'ET' | 'N';

const STRONG_R = /[\p{Script=Hebrew}\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}]/u;
const STRONG_L = /[\p{L}\p{Mc}]/u;
const NUMBER = /\p{Nd}/u;
const COMMON_SEPARATOR = /[.,:/\u00a0\u060c]/u;
const EUROPEAN_SEPARATOR = /[+-]/;
const TERMINATOR = /[#$%\u00b0\u00a2-\u00a5\u066a\u2030\u2031\u20a0-\u20cf]/u;

function typeOf(char: string): BidiType {
  if (STRONG_R.test(char) && !NUMBER.test(char)) return 'R';
  if (NUMBER.test(char)) return 'EN';
  if (STRONG_L.test(char)) return 'L';
  if (COMMON_SEPARATOR.test(char)) return 'CS';
  if (EUROPEAN_SEPARATOR.test(char)) return 'ES';
  if (TERMINATOR.test(char)) return 'ET';
  return 'N';
}

const MIRRORED: Readonly<Record<string, string>> = {
  '(': ')',
  ')': '(',
  '[': ']',
  ']': '[',
  '{': '}',
  '}': '{',
  '<': '>',
  '>': '<',
  '«': '»',
  '»': '«',
  '‹': '›',
  '›': '‹',
};

const OPENING: Readonly<Record<string, string>> = { '(': ')', '[': ']', '{': '}' };
const CLOSING = new Set(Object.values(OPENING));

/**
 * The bracket pairs of a line as UAX #9 BD16 finds them (a stack of at most 63 openers; a closer
 * pairs with the nearest matching opener, dropping those above it), sorted by opening position.
 */
function bracketPairs(chars: readonly string[]): [number, number][] {
  const stack: { index: number; closer: string }[] = [];
  const pairs: [number, number][] = [];
  for (const [i, char] of chars.entries()) {
    const closer = OPENING[char];
    if (closer) {
      if (stack.length === 63) break;
      stack.push({ index: i, closer });
    } else if (CLOSING.has(char)) {
      const at = stack.findLastIndex((open) => open.closer === char);
      if (at >= 0) {
        pairs.push([stack[at]!.index, i]);
        stack.length = at;
      }
    }
  }
  return pairs.sort((a, b) => a[0] - b[0]);
}

/** True when a text has a strong right-to-left character (its runs need reordering). */
export function hasRightToLeft(text: string): boolean {
  return STRONG_R.test(text);
}

/**
 * The direction of a text by its first strong character (UAX #9 P2–P3, what HTML's `dir="auto"`
 * does): `rtl` when it is Hebrew, Arabic, …, else `ltr` (also for a text with none).
 */
export function firstStrongDirection(text: string): 'ltr' | 'rtl' {
  for (const char of text) {
    if (STRONG_R.test(char) && !NUMBER.test(char)) return 'rtl';
    if (STRONG_L.test(char)) return 'ltr';
  }
  return 'ltr';
}

/**
 * The runs of one line in drawing order, left to right.
 * @param text one line (no line breaks)
 * @param direction the paragraph's direction: the line's base level 0 (ltr) or 1 (rtl)
 * @returns runs whose texts, concatenated in logical order, are `text` (brackets of right-to-left
 *   runs mirrored); a right-to-left run is to be drawn reversed
 */
export function bidiRuns(text: string, direction: 'ltr' | 'rtl'): BidiRun[] {
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const base = direction === 'rtl' ? 1 : 0;
  const baseType: BidiType = base === 1 ? 'R' : 'L';
  const types = chars.map(typeOf);

  // W4: one separator between two numbers is a number (CS: common; ES: European).
  for (let i = 1; i < types.length - 1; i++)
    if ((types[i] === 'CS' || types[i] === 'ES') && types[i - 1] === 'EN' && types[i + 1] === 'EN') types[i] = 'EN';
  // W5: terminators next to a number are numbers.
  for (let i = 0; i < types.length; i++) {
    if (types[i] !== 'ET') continue;
    let end = i;
    while (end < types.length && types[end] === 'ET') end++;
    if ((i > 0 && types[i - 1] === 'EN') || (end < types.length && types[end] === 'EN'))
      for (let k = i; k < end; k++) types[k] = 'EN';
    i = end - 1;
  }
  // W6: other separators and terminators are neutral. W7: a number after strong L (or an ltr start) is L.
  let lastStrong: BidiType = baseType;
  for (let i = 0; i < types.length; i++) {
    const type = types[i]!;
    if (type === 'CS' || type === 'ES' || type === 'ET') types[i] = 'N';
    else if (type === 'L' || type === 'R') lastStrong = type;
    else if (type === 'EN' && lastStrong === 'L') types[i] = 'L';
  }
  // N0: each bracket pair takes the paragraph's direction when it encloses a strong type of it,
  // else the other direction when it encloses that and the text before it is of that direction.
  const strongOf = (type: BidiType): 'L' | 'R' | undefined =>
    type === 'L' ? 'L' : type === 'R' || type === 'EN' ? 'R' : undefined;
  for (const [open, close] of bracketPairs(chars)) {
    let inside: 'L' | 'R' | undefined;
    for (let k = open + 1; k < close; k++) {
      const strong = strongOf(types[k]!);
      if (!strong) continue;
      inside = strong;
      if (strong === baseType) break;
    }
    if (!inside) continue;
    let before: 'L' | 'R' = baseType;
    for (let k = open - 1; k >= 0; k--) {
      const strong = strongOf(types[k]!);
      if (strong) {
        before = strong;
        break;
      }
    }
    const resolved = inside === baseType || before !== inside ? baseType : inside;
    types[open] = resolved;
    types[close] = resolved;
  }
  // N1/N2: neutrals between strong types of one direction (numbers count as R) take it; else the base's.
  const strength = (type: BidiType): 'L' | 'R' => (type === 'L' ? 'L' : 'R');
  for (let i = 0; i < types.length; i++) {
    if (types[i] !== 'N') continue;
    let end = i;
    while (end < types.length && types[end] === 'N') end++;
    const before = i > 0 ? strength(types[i - 1]!) : baseType;
    const after = end < types.length ? strength(types[end]!) : baseType;
    const resolved: BidiType = before === after ? before : baseType;
    for (let k = i; k < end; k++) types[k] = resolved;
    i = end - 1;
  }
  // I1/I2: levels.
  const levels = types.map((type) => {
    if (base === 0) return type === 'L' ? 0 : type === 'R' ? 1 : 2;
    return type === 'R' ? 1 : 2;
  });

  // Runs of one level in logical order, then L2 on runs: from the highest level down to the
  // lowest odd one, reverse every sequence of runs at that level or higher.
  const runs: { text: string; level: number }[] = [];
  chars.forEach((char, i) => {
    const level = levels[i]!;
    const last = runs.at(-1);
    const shown = level % 2 === 1 ? (MIRRORED[char] ?? char) : char;
    if (last && last.level === level) last.text += shown;
    else runs.push({ text: shown, level });
  });
  const highest = Math.max(...runs.map((r) => r.level));
  const lowestOdd = Math.min(...runs.map((r) => (r.level % 2 === 1 ? r.level : r.level + 1)));
  for (let level = highest; level >= lowestOdd; level--) {
    for (let i = 0; i < runs.length; i++) {
      if (runs[i]!.level < level) continue;
      let end = i;
      while (end < runs.length && runs[end]!.level >= level) end++;
      runs.splice(i, end - i, ...runs.slice(i, end).reverse());
      i = end - 1;
    }
  }
  return runs.map((run) => ({ text: run.text, rtl: run.level % 2 === 1 }));
}
