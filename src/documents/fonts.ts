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
import type { PDFDocument, PDFFont } from 'pdf-lib';

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
): Promise<{ pdfFont: PDFFont; width(text: string, size: number): number }> {
  const pdfFont = await doc.embedFont(face.bytes, { subset: true, features: TEXT_FEATURES, ...options });
  const advances = advancesOf(face.face);
  const unitsPerEm = face.face.unitsPerEm;
  return {
    pdfFont,
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
 * punctuation, currency and letterlike symbols. No combining marks (U+0300–U+036F) and no soft
 * hyphen.
 */
const SIMPLE_CHARACTER = new RegExp(
  String.raw`^[\u0020-\u007e\u00a0-\u00ac\u00ae-\u024f\u0370-\u03ff\u0400-\u0482\u048a-\u052f\u1e00-\u1eff` +
    String.raw`\u1f00-\u1ffe\u2010-\u2027\u2030-\u205e\u20a0-\u20c0\u2100-\u214f]$`,
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
