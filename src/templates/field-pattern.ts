/**
 * A field's `validation.pattern` (issue 12 "ReDoS"). Patterns are the template author's code and
 * run on every value a signer sends, so they run on RE2 — re2js, a pure-JavaScript port of RE2
 * (MIT, maintained, no native build, works in the browser too): matching is linear in the value's
 * length whatever the pattern, with no backtracking (`(a+)+$` on 35 characters took 107 s with
 * JavaScript's RegExp, and microseconds here). As the HTML `pattern` attribute DocuSeal's form
 * uses, the whole value must match (RE2's `testExact`).
 *
 * JavaScript syntax is translated first (RE2JS.translateRegExp: `\uXXXX`, `\u{…}`, `\cX`, `[^]`,
 * `(?<name>…)`). What RE2 cannot run — lookahead, lookbehind, backreferences — is refused when a
 * pattern is set (template create and update, submission field settings): checkFieldPattern,
 * 422 naming the field.
 *
 * Size: RE2's cost per character, and the cost of compiling, grow with the compiled program, and a
 * counted repetition multiplies it (`(?:a?){999}a{999}` is 3,000 instructions; a 410-character
 * pattern can make 400,000, ~0.7 s to compile). So a pattern is refused over MAX_LENGTH.pattern
 * characters or MAX_PATTERN_PROGRAM instructions, the latter estimated from its text before
 * compiling (RE2's own size rule, src: re2js Parser.calcSize) and checked again once compiled.
 * Under the cap, compiling takes < 5 ms, and checking a 10,000-character value < 40 ms the first
 * time and < 1 ms after (measured); a 35-character one, microseconds.
 *
 * Shared by the server's checks (build-fields.ts here, src/signing-form/field-values.ts,
 * src/submissions/create-submissions.ts) and the signing page (src/signing-form/page/values.ts,
 * which imports this module on demand: re2js, ~150 KB minified, is a chunk of its own fetched
 * only by forms with a pattern), so both judge a value the same way and neither a server
 * nor a signer's browser can be stalled by a pattern. It lives with the template rules because a
 * pattern is part of a template's field; the form and submissions apply it.
 */
import { RE2JS } from 're2js';
import { AppError } from '../errors.ts';
import { MAX_LENGTH } from '../limits.ts';

/** Largest compiled pattern, in RE2 instructions (`.{0,495}` fits; `.{0,500}` does not). */
export const MAX_PATTERN_PROGRAM = 1_000;

/** A compiled pattern: whether a whole value matches. */
export interface FieldPattern {
  test(value: string): boolean;
}

/** Recently judged patterns, compiled or refused (a template's patterns are checked at each completion). */
const judged = new Map<string, FieldPattern | string>();
const JUDGED_KEPT = 256;

/** The compiled pattern, or why it cannot be used (a message completing "<path> …"). */
function judge(pattern: string): FieldPattern | string {
  if (pattern.length > MAX_LENGTH.pattern) return `is too long (maximum is ${MAX_LENGTH.pattern} characters).`;
  let result = judged.get(pattern);
  if (result === undefined) {
    result = compile(pattern);
    if (judged.size >= JUDGED_KEPT) judged.delete(judged.keys().next().value!);
    judged.set(pattern, result);
  }
  return result;
}

/**
 * The pattern compiled with RE2, or null when it cannot be used (see fieldPatternProblem): the
 * template's fault, not the signer's, so a value is then not checked against it. (Templates
 * are checked when saved; a template saved before patterns ran on RE2 may hold one.)
 */
export function compileFieldPattern(pattern: string): FieldPattern | null {
  const result = judge(pattern);
  return typeof result === 'string' ? null : result;
}

/** Why a pattern cannot be used, as a message completing "<path> …", or null when it can. */
export function fieldPatternProblem(pattern: string): string | null {
  const result = judge(pattern);
  return typeof result === 'string' ? result : null;
}

/**
 * Checks a pattern when it is set (template fields, submission field settings).
 * @param pattern `validation.pattern` as given (anything but a non-empty string is left to the
 *   schema)
 * @param path where it is, as messages write it ("fields[0].validation.pattern")
 * @throws AppError VALIDATION "<path> is too long (maximum is 1000 characters).", "<path> is not
 *   supported: … (patterns run on RE2: lookahead, lookbehind and backreferences are not
 *   available)." or "<path> is too complex …", with details {path}
 */
export function checkFieldPattern(pattern: unknown, path: string): void {
  if (typeof pattern !== 'string' || pattern === '') return;
  const problem = fieldPatternProblem(pattern);
  if (problem) throw new AppError('VALIDATION', `${path} ${problem}`, { details: { path } });
}

/** Compiles a pattern of at most MAX_LENGTH.pattern characters, or says why it cannot be used. */
function compile(pattern: string): FieldPattern | string {
  if (hasNamedBackreference(pattern)) return unsupported('`\\k<name>` is a backreference');
  let translated: string;
  try {
    translated = RE2JS.translateRegExp(pattern);
  } catch (error) {
    return unsupported((error as Error).message);
  }
  const estimate = estimateProgramSize(translated);
  if (estimate > MAX_PATTERN_PROGRAM) return tooComplex(estimate);
  let re: RE2JS;
  try {
    re = RE2JS.compile(translated);
  } catch (error) {
    return unsupported((error as Error).message.replace(/^error parsing regexp: /, ''));
  }
  // The compiled size (not part of re2js' typed API: checked when present).
  const size = (re as unknown as { re2Input?: { prog?: { numInst?: () => number } } }).re2Input?.prog?.numInst?.();
  if (size !== undefined && size > MAX_PATTERN_PROGRAM) return tooComplex(size);
  return { test: (value) => re.testExact(value) };
}

const unsupported = (reason: string) =>
  `is not supported: ${reason} (patterns run on RE2, in linear time: lookahead, lookbehind and ` +
  'backreferences are not available).';

const tooComplex = (size: number) =>
  `is too complex: it compiles to about ${size} steps (maximum is ${MAX_PATTERN_PROGRAM}); ` +
  'large counted repetitions such as {0,1000} make patterns large.';

/** `\k<name>`: translateRegExp would read it as the letter k (JavaScript's meaning without named groups). */
function hasNamedBackreference(pattern: string): boolean {
  for (let i = 0; i < pattern.length - 2; i += 1) {
    if (pattern[i] !== '\\') continue;
    if (pattern[i + 1] === 'k' && pattern[i + 2] === '<') return true;
    i += 1; // skip the escaped character
  }
  return false;
}

/** `{n}`, `{n,}`, `{n,m}` at a position (sticky). */
const REPEAT = /\{(\d{1,7})(?:(,)(\d{0,7}))?\}/y;

/**
 * An estimate, from the text, of the RE2 program a pattern compiles to (instructions), following
 * RE2's size rule (re2js Parser.calcSize): a literal or class is 1, `*` adds 2, `+` and `?` 1, a
 * capture 2, each alternative 1, and `{min,max}` repeats its operand max times (plus max − min).
 * Escapes and group openers may count a character or two more than RE2 does: an over-estimate
 * by design. Linear in the pattern's length.
 */
function estimateProgramSize(pattern: string): number {
  const frames = [{ size: 0, last: 0, capturing: false }];
  const top = () => frames[frames.length - 1]!;
  const atom = (size: number) => {
    top().size += size;
    top().last = size;
  };
  const quantify = (size: number) => {
    top().size += size - top().last;
    top().last = size;
  };
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === '\\') {
      const next = pattern[i + 1];
      if (next === 'Q') {
        // \Q…\E: a literal, one instruction per character.
        const end = pattern.indexOf('\\E', i + 2);
        const stop = end === -1 ? pattern.length : end;
        if (stop > i + 2) {
          top().size += stop - i - 3;
          atom(1);
        }
        i = end === -1 ? pattern.length : end + 2;
        continue;
      }
      if ((next === 'x' || next === 'p' || next === 'P') && pattern[i + 2] === '{') {
        const end = pattern.indexOf('}', i + 3);
        i = end === -1 ? pattern.length : end + 1;
      } else {
        i += 2;
      }
      atom(1);
      continue;
    }
    if (c === '[') {
      i = classEnd(pattern, i);
      atom(1);
      continue;
    }
    if (c === '(') {
      if (pattern[i + 1] !== '?') {
        frames.push({ size: 0, last: 0, capturing: true });
        i += 1;
        continue;
      }
      if (pattern[i + 2] === 'P' || (pattern[i + 2] === '<' && pattern[i + 3] !== '=' && pattern[i + 3] !== '!')) {
        const end = pattern.indexOf('>', i);
        frames.push({ size: 0, last: 0, capturing: true });
        i = end === -1 ? pattern.length : end + 1;
        continue;
      }
      // (?flags) or (?flags:…) or a lookaround RE2 will refuse.
      let j = i + 2;
      while (j < pattern.length && /[a-zA-Z-]/.test(pattern[j]!)) j += 1;
      if (pattern[j] === ')') {
        i = j + 1;
        continue;
      }
      frames.push({ size: 0, last: 0, capturing: false });
      i = pattern[j] === ':' ? j + 1 : j;
      continue;
    }
    if (c === ')') {
      if (frames.length > 1) {
        const group = frames.pop()!;
        atom(group.size + (group.capturing ? 2 : 0));
      }
      i += 1;
      continue;
    }
    if (c === '|') {
      top().size += 1;
      top().last = 0;
      i += 1;
      continue;
    }
    if (c === '*' || c === '+' || c === '?') {
      quantify(top().last + (c === '*' ? 2 : 1));
      i += pattern[i + 1] === '?' ? 2 : 1;
      continue;
    }
    if (c === '{') {
      REPEAT.lastIndex = i;
      const repeat = REPEAT.exec(pattern);
      if (repeat) {
        const min = Number(repeat[1]);
        const max = repeat[2] === undefined ? min : repeat[3] === '' ? -1 : Number(repeat[3]);
        const operand = top().last;
        quantify(
          max === -1
            ? min === 0
              ? 2 + operand
              : 1 + min * Math.max(operand, 1)
            : max * operand + Math.max(max - min, 0),
        );
        i = REPEAT.lastIndex + (pattern[REPEAT.lastIndex] === '?' ? 1 : 0);
        continue;
      }
    }
    atom(1);
    i += 1;
  }
  // Unclosed groups (RE2 will refuse the pattern) count what they hold.
  return frames.reduce((sum, frame) => sum + frame.size, 0) + 3;
}

/** The index after the `]` closing the class that opens at `start` (`[]…]`, `[^]…]`, `[[:alpha:]]`, escapes). */
function classEnd(pattern: string, start: number): number {
  let j = start + 1;
  if (pattern[j] === '^') j += 1;
  if (pattern[j] === ']') j += 1;
  while (j < pattern.length) {
    const c = pattern[j];
    if (c === '\\') j += 2;
    else if (c === '[' && pattern[j + 1] === ':') {
      const end = pattern.indexOf(':]', j + 2);
      j = end === -1 ? j + 1 : end + 2;
    } else if (c === ']') return j + 1;
    else j += 1;
  }
  return pattern.length;
}
