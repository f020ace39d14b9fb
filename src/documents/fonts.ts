/**
 * The DejaVu faces the completion pipeline draws with (values, typed signatures, the audit log),
 * read and parsed once per process, and a fast text width.
 *
 * Why: pdf-lib parses a face again with fontkit on every embedFont (a copy of the whole file and
 * its tables, per document), and measures text with fontkit's full layout (GSUB and GPOS lookups,
 * ~25 µs a character). Fitting values and wrapping the audit log measure many strings; these two
 * were a third of the pipeline's CPU time (bench/README.md, Completion).
 */
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import fontkit from '@pdf-lib/fontkit';
import type { Color, PDFDocument, PDFFont, PDFPage } from 'pdf-lib';

type Face = ReturnType<typeof fontkit.create>;

/** One DejaVu face: the file, its fontkit parse, and its hhea metrics per 1 pt. */
export interface DejaVuFace {
  /** The TTF bytes; give these to embedDejaVu (the parse is reused for exactly these bytes). */
  bytes: Uint8Array;
  face: Face;
  /** Ascender and descender (positive) per point of size. */
  ascent: number;
  descent: number;
}

/**
 * Features for layout and embedding: ligatures off, so "fi" stays two glyphs (extracted text
 * matches the value exactly) and widths add up character by character.
 */
export const TEXT_FEATURES = { liga: false, rlig: false, clig: false } as const;

const require = createRequire(import.meta.url);
const faces = new Map<string, Promise<DejaVuFace>>();
const parsed = new WeakMap<Uint8Array, Face>();

/**
 * A DejaVu face by file name without `.ttf` (`DejaVuSans`, `DejaVuSerif-Italic`, …), from the
 * npm package dejavu-fonts-ttf; read and parsed once per process.
 * @throws Error when the package or the file is missing (a failed load is retried on the next call)
 */
export function loadDejaVu(name: string): Promise<DejaVuFace> {
  let loaded = faces.get(name);
  if (!loaded) {
    loaded = fs.readFile(require.resolve(`dejavu-fonts-ttf/ttf/${name}.ttf`)).then((buffer) => {
      const bytes = new Uint8Array(buffer);
      const face = fontkit.create(bytes);
      // fontkit keeps one glyph object per glyph id, with the code points it was first asked
      // for, and pdf-lib writes the ToUnicode map from them. A glyph first created as a
      // component of a composite (Cyrillic "а" is Latin "a" placed whole), while a subset is
      // written, has none, and would extract as nothing in every later document. So every
      // mapped glyph is created now, with its lowest code point (U+0020 for the space, not
      // U+00A0): ~5,000 glyph objects, a few milliseconds.
      for (const codePoint of [...face.characterSet].sort((a, b) => a - b)) face.glyphForCodePoint(codePoint);
      parsed.set(bytes, face);
      return { bytes, face, ascent: face.ascent / face.unitsPerEm, descent: Math.abs(face.descent) / face.unitsPerEm };
    });
    loaded.catch(() => faces.delete(name));
    faces.set(name, loaded);
  }
  return loaded;
}

/**
 * pdf-lib's fontkit with one change: bytes that loadDejaVu parsed are not parsed again. pdf-lib
 * only reads the face (layout, glyphs, a subset of its own per document), so one parse serves
 * every document.
 */
const cachingFontkit: Parameters<PDFDocument['registerFontkit']>[0] = {
  create: (data: Uint8Array, postscriptName?: string) =>
    (postscriptName === undefined && parsed.get(data)) || fontkit.create(data, postscriptName),
};

/** Registers the caching fontkit on a document (instead of `doc.registerFontkit(fontkit)`). */
export function registerFontkit(doc: PDFDocument): void {
  doc.registerFontkit(cachingFontkit);
}

/**
 * Embeds a face as a subset with TEXT_FEATURES and returns it with a width function that gives
 * exactly pdf-lib's `widthOfTextAtSize` (the sum of the laid-out glyphs' advances; pdf-lib does
 * not apply kerning) without running fontkit's layout for plain text: when every character is in
 * the scripts below and lays out alone as its own cmap glyph, the width is the sum of the
 * characters' advances (no ligatures, no combining marks, no contextual forms: nothing that
 * joins characters). Any other text is measured by pdf-lib. test/draw-values.test.ts compares
 * the two on random strings. `options.features` replaces TEXT_FEATURES: the audit log turns the
 * required ligatures back on for Arabic's lam-alef (they join no character of the simple scripts,
 * so the fast width stays exact).
 */
export async function embedDejaVu(
  doc: PDFDocument,
  face: DejaVuFace,
  options: { customName?: string; features?: Record<string, boolean> } = {},
): Promise<EmbeddedFace> {
  const pdfFont = await doc.embedFont(face.bytes, { subset: true, features: TEXT_FEATURES, ...options });
  const advances = advancesOf(face.face);
  const unitsPerEm = face.face.unitsPerEm;
  return {
    pdfFont,
    face: face.face,
    width(text, size) {
      let total = 0;
      for (const char of text) {
        const advance = advances(char);
        if (advance === null) return pdfFont.widthOfTextAtSize(text, size);
        total += advance;
      }
      return (total / unitsPerEm) * size;
    },
  };
}

/**
 * Latin (with Latin-1, Extended-A/B and Additional), Greek (and Extended), Cyrillic, general
 * punctuation, currency and letterlike symbols; CJK punctuation, kana, Han ideographs (with
 * Extension A), Hangul syllables and full-width forms (loadCjk's face). No combining marks
 * (U+0300–U+036F, U+302A–U+302F, U+3099–U+309A) and no soft hyphen.
 */
const SIMPLE_CHARACTER = new RegExp(
  String.raw`^[\u0020-\u007e\u00a0-\u00ac\u00ae-\u024f\u0370-\u03ff\u0400-\u0482\u048a-\u052f\u1e00-\u1eff` +
    String.raw`\u1f00-\u1ffe\u2010-\u2027\u2030-\u205e\u20a0-\u20c0\u2100-\u214f` +
    String.raw`\u3001-\u3029\u3030-\u303f\u3041-\u3098\u309b-\u30ff\u3400-\u4dbf\u4e00-\u9fff` +
    String.raw`\uac00-\ud7a3\uff01-\uff60]$`,
  'u',
);
const advanceCaches = new WeakMap<Face, Map<string, number | null>>();

/** Per face: a character's advance in font units when it is simple (see embedDejaVu), else null; memoised. */
function advancesOf(face: Face): (char: string) => number | null {
  let cache = advanceCaches.get(face);
  if (!cache) {
    cache = new Map();
    advanceCaches.set(face, cache);
  }
  const known = cache;
  return (char) => {
    let advance = known.get(char);
    if (advance === undefined) {
      advance = null;
      if (SIMPLE_CHARACTER.test(char)) {
        const glyph = face.glyphForCodePoint(char.codePointAt(0)!);
        const laidOut = face.layout(char, TEXT_FEATURES).glyphs;
        if (glyph.id !== 0 && laidOut.length === 1 && laidOut[0]!.id === glyph.id) advance = glyph.advanceWidth;
      }
      known.set(char, advance);
    }
    return advance;
  };
}

// --- CJK: the fallback face for what DejaVu cannot draw -----------------------------------------

/**
 * Where the CJK face is looked for, in order: `FONT_CJK_PATH` (a TTF, OTF or TTC; in a collection
 * the first face, or the one named by `FONT_CJK_NAME`, a PostScript name), then the file the
 * Debian package fonts-wqy-microhei installs, which the Dockerfile and .ci/run install.
 *
 * Why WenQuanYi Micro Hei: one 5 MB file (Debian's fonts-wqy-microhei, Installed-Size 5,135 kB)
 * with glyphs for Simplified and Traditional Chinese (GBK, Big5), Japanese (kana, JIS X 0208
 * kanji) and Korean (all 11,172 Hangul syllables) — the three languages of src/i18n/languages.ts
 * that DejaVu cannot write. Noto Sans CJK (fonts-noto-cjk) draws them better but is 91 MB
 * installed, and the npm registry has no single-file pan-CJK font: Source Han Sans
 * (node-source-han-sans) is a 185 MB tarball, Google Fonts' Noto Sans JP/SC/KR come as one
 * package per script and weight (@expo-google-fonts/*) or as a hundred WOFF2 slices a script
 * (@fontsource/*). Issue 27 wants a smaller image: 5 MB it is. Documents embed only the glyphs
 * they use (a subset), and only when a text needs one.
 */
export const CJK_FONT_PATHS = ['/usr/share/fonts/truetype/wqy/wqy-microhei.ttc'] as const;

let cjk: Promise<DejaVuFace | null> | undefined;
/** FONT_CJK_PATH and FONT_CJK_NAME, as configureCjkFont was given them. */
let cjkSettings: { path: string | undefined; name: string | undefined } = { path: undefined, name: undefined };

/**
 * Sets where the CJK face is read from (src/config.ts `cjkFont`: FONT_CJK_PATH, FONT_CJK_NAME); the
 * service calls it at start (src/app.ts). Unset: CJK_FONT_PATHS. The face is read again on next use.
 */
export function configureCjkFont(settings: { path: string | undefined; name: string | undefined }): void {
  if (settings.path === cjkSettings.path && settings.name === cjkSettings.name) return;
  cjkSettings = { ...settings };
  cjk = undefined;
}

/**
 * The CJK fallback face (see CJK_FONT_PATHS), read and parsed once per process; null when no file
 * is there (then CJK characters are drawn as DejaVu's missing glyph, and the audit log of a zh, ja
 * or ko signer is printed in English: auditLogLanguage, src/signing/audit-log.ts).
 * @throws Error when FONT_CJK_PATH is set and cannot be read or parsed, or FONT_CJK_NAME names no face of it
 */
export function loadCjk(): Promise<DejaVuFace | null> {
  if (!cjk) {
    cjk = (async () => {
      let path: string | undefined = cjkSettings.path;
      if (!path) {
        for (const candidate of CJK_FONT_PATHS) {
          if (
            await fs.access(candidate).then(
              () => true,
              () => false,
            )
          ) {
            path = candidate;
            break;
          }
        }
      }
      if (!path) return null;
      const bytes = new Uint8Array(await fs.readFile(path));
      const created = fontkit.create(bytes) as Face | { fonts: Face[] };
      const name = cjkSettings.name;
      const collection = 'fonts' in created ? created.fonts : [created];
      const face = name ? collection.find((f) => f.postscriptName === name) : collection[0];
      if (!face) throw new Error(`FONT_CJK_NAME ${name} is not a face of ${path}`);
      // As loadDejaVu: every mapped glyph created with its lowest code point (~35,000, ~0.1 s).
      for (const codePoint of [...face.characterSet].sort((a, b) => a - b)) face.glyphForCodePoint(codePoint);
      parsed.set(bytes, face);
      return { bytes, face, ascent: face.ascent / face.unitsPerEm, descent: Math.abs(face.descent) / face.unitsPerEm };
    })();
    cjk.catch(() => {
      cjk = undefined;
    });
  }
  return cjk;
}

/** A face embedded in a document (embedDejaVu's result) with the face it came from. */
export interface EmbeddedFace {
  pdfFont: PDFFont;
  face: Face;
  width(text: string, size: number): number;
}

/** A run of a line drawn in one face (fontRuns). */
export interface FontRun {
  text: string;
  font: EmbeddedFace;
}

const SPACE_OR_MARK = /^[\s\p{M}\u200b-\u200d\u2060\ufeff]$/u;
const coverage = new WeakMap<Face, Set<number>>();

function covers(face: Face, char: string): boolean {
  let set = coverage.get(face);
  if (!set) {
    set = new Set(face.characterSet);
    coverage.set(face, set);
  }
  return set.has(char.codePointAt(0)!);
}

/**
 * The one place that picks the face for each part of a text: `text` cut into runs, each drawn in
 * the first of `faces` (the primary — DejaVu — then fallbacks such as loadCjk's) that has a glyph
 * for its characters. A character no face has goes to the primary (its missing glyph); spaces,
 * combining marks and zero-width characters stay in the run they are in, so "山田 太郎" is one
 * run. Concatenating the runs' texts gives `text`. Used per bidi run (src/i18n/bidi.ts) by the
 * audit log and the drawn values.
 */
export function fontRuns(text: string, faces: readonly EmbeddedFace[]): FontRun[] {
  const primary = faces[0]!;
  if (faces.length === 1) return text ? [{ text, font: primary }] : [];
  const runs: FontRun[] = [];
  for (const char of text) {
    const last = runs[runs.length - 1];
    let font = primary;
    if (last && SPACE_OR_MARK.test(char)) font = last.font;
    else if (!covers(primary.face, char)) font = faces.find((f) => covers(f.face, char)) ?? primary;
    if (last && last.font === font) last.text += char;
    else runs.push({ text: char, font });
  }
  return runs;
}

/**
 * Whether some character of `texts` is outside ASCII and missing from one of `faces`: only then
 * is the CJK face read (loadCjk costs ~0.2 s and ~20 MB once per process), so a process that
 * draws only what DejaVu has never loads it.
 */
export function lacksGlyphs(texts: Iterable<string>, faces: readonly Face[]): boolean {
  for (const text of texts)
    for (const char of text) if (char.codePointAt(0)! > 0x7f && faces.some((face) => !covers(face, char))) return true;
  return false;
}

/**
 * True when some character of `texts` is missing from `primary` and present in `fallback`: the
 * fallback must be embedded (it is only embedded then, so documents without such text do not
 * carry an empty subset).
 */
export function needsFallback(texts: Iterable<string>, primary: Face, fallback: Face): boolean {
  for (const text of texts)
    for (const char of text)
      if (char.codePointAt(0)! > 0x7f && !covers(primary, char) && covers(fallback, char)) return true;
  return false;
}

/** Width in points of `text` at `size` drawn run by run (fontRuns). */
export function runsWidth(text: string, faces: readonly EmbeddedFace[], size: number): number {
  if (faces.length === 1) return faces[0]!.width(text, size);
  return fontRuns(text, faces).reduce((sum, run) => sum + run.font.width(run.text, size), 0);
}

/**
 * Draws `text` (one line, characters in drawing order) from `x` on, run by run (fontRuns), each
 * in its face; returns the width drawn in points.
 */
export function drawRuns(
  page: PDFPage,
  text: string,
  faces: readonly EmbeddedFace[],
  options: { x: number; y: number; size: number; color: Color },
): number {
  let x = options.x;
  for (const run of fontRuns(text, faces)) {
    page.drawText(run.text, { ...options, x, font: run.font.pdfFont });
    x += run.font.width(run.text, options.size);
  }
  return x - options.x;
}
