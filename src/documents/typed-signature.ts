/**
 * A typed signature as an image: the text drawn in the signing page's script font (Dancing Script,
 * the two `@fontsource/dancing-script` files the page declares in styles.css, latin and latin-ext)
 * into a PNG cut to its ink. DocuSeal does the same for a signature or initials value given as
 * short text over the API (lib/submitters/normalize_values.rb `find_or_create_blob_from_text`,
 * lib/submitters/generate_font_image.rb: Dancing Script, one line, cropped, stored as
 * `signature.png`); its signing page draws the typed name on a canvas and uploads the PNG. Signet
 * renders both here, on the server, so a typed signature looks the same however it arrives and
 * keeps its text (the stored file's `metadata.typed_text`, read by `values` and the audit log).
 *
 * How: fontkit (`@pdf-lib/fontkit`, already used to embed fonts) lays the text out with the font's
 * own kerning and contextual forms, as a browser does, and gives each glyph's outline; mupdf
 * (`mupdf`, already used for previews; it cannot read WOFF fonts itself) fills the outlines into a
 * coverage pixmap, written as a PNG with node's zlib. No new dependency: a canvas library
 * (`@napi-rs/canvas`) would do the same with a native binary.
 * Characters the script font lacks (Cyrillic, Greek, …) are drawn in DejaVu Serif Italic, the
 * page's next choice being a `cursive` face (there is no other handwriting face bundled).
 */
import fs from 'node:fs/promises';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import type fontkit from '@pdf-lib/fontkit';
import { AppError } from '../errors.ts';
import { MAX_LENGTH } from '../limits.ts';
import { loadMupdf } from './pdf.ts';

type Face = ReturnType<typeof fontkit.create>;

/** A rendered typed signature: PNG bytes and the image's size in pixels. */
export interface TypedSignatureImage {
  png: Uint8Array;
  width: number;
  height: number;
  /** The text drawn (typedSignatureText of the input). */
  text: string;
}

/** Font size in pixels: the page's typed preview renders at 96 px too (so about 120 px tall with margins). */
const FONT_SIZE_PX = 96;
/** Transparent margin around the ink, in pixels (about 10 % of the font size). */
const MARGIN_PX = 10;
/** The page's ink colour (signature-dialog.ts INK, #14245c), red, green and blue. */
const INK = [0x14, 0x24, 0x5c] as const;
/** The script font's files, in the order the page's @font-face rules try them. */
const SCRIPT_FONT_FILES = ['dancing-script-latin-400-normal.woff2', 'dancing-script-latin-ext-400-normal.woff2'];
/** For characters the script font lacks. */
const FALLBACK_FACE = 'DejaVuSerif-Italic';

const require = createRequire(import.meta.url);
let faces: Promise<Face[]> | undefined;

/** The script font's faces and the fallback, read and parsed once per process (retried after a failure). */
function loadFaces(): Promise<Face[]> {
  faces ??= (async () => {
    // fontkit and the fonts module on first use: this module's text rules are read on every create and
    // read path, and fontkit costs ~25 MB of a process that never renders (bench: idle RSS).
    const [{ default: fontkit }, { loadDejaVu }] = await Promise.all([
      import('@pdf-lib/fontkit'),
      import('./fonts.ts'),
    ]);
    const dir = `${require.resolve('@fontsource/dancing-script/package.json').replace(/package\.json$/, '')}files/`;
    const script = await Promise.all(
      SCRIPT_FONT_FILES.map(async (file) => fontkit.create(new Uint8Array(await fs.readFile(dir + file)))),
    );
    return [...script, (await loadDejaVu(FALLBACK_FACE)).face];
  })();
  faces.catch(() => {
    faces = undefined;
  });
  return faces;
}

/**
 * The text a typed signature shows: Unicode NFC, every run of white space or control characters
 * one space, trimmed. Empty when nothing visible is left.
 */
export function typedSignatureText(text: string): string {
  return text
    .normalize('NFC')
    .replace(/[\s\p{Cc}\p{Cf}]+/gu, ' ')
    .trim();
}

/**
 * Whether `text` is short enough to be a typed signature: under 60 characters (Unicode code
 * points, as Ruby counts them), DocuSeal's `value.length < 60` (normalize_values.rb); longer text
 * is read as a URL or base64 there, and is refused by the page's upload (MAX_LENGTH.typedSignature).
 */
export function isTypedSignatureLength(text: string): boolean {
  return [...text].length <= MAX_LENGTH.typedSignature;
}

/**
 * Renders `text` (after typedSignatureText) in the page's script font, one line, 96 px, in the
 * page's ink on a transparent background, cut to the glyphs' outline box plus a 10 px margin
 * (the same bytes for the same text).
 * Cost, on the event loop: a 59-character name is about 2,400 × 140 px; median 19 ms (59 letters
 * of a name) and 75 ms (59 "W", the widest) measured on this project's 2-core machine at a load
 * average of 16, so a few milliseconds on an idle core (fonts parsed once per process, mupdf's
 * WASM loaded on first use). Callers bound the length (MAX_LENGTH.typedSignature) and the number
 * per request (MAX_ITEMS.typedSignatures).
 * @returns the PNG, its size in pixels, and the text drawn
 * @throws AppError VALIDATION "signature is empty" when no visible text is left, "typed signature
 *   is too long (maximum is 59 characters)." over MAX_LENGTH.typedSignature
 */
export async function renderTypedSignature(text: string): Promise<TypedSignatureImage> {
  const clean = typedSignatureText(text);
  if (clean === '') throw new AppError('VALIDATION', 'signature is empty');
  if (!isTypedSignatureLength(clean))
    throw new AppError(
      'VALIDATION',
      `typed signature is too long (maximum is ${MAX_LENGTH.typedSignature} characters).`,
    );
  const [mupdf, all] = await Promise.all([loadMupdf(), loadFaces()]);

  // One path a glyph (mupdf's scan converter sorts and walks all edges of a path together: one
  // path for the whole line made a long name several times slower), in pixels, y down, the
  // baseline at y = 0 and the pen starting at x = 0.
  const paths: MupdfPath[] = [];
  // The control box of every point added (it holds the ink; Bézier control points may lie outside it).
  const box = [Infinity, Infinity, -Infinity, -Infinity] as [number, number, number, number];
  const point = (x: number, y: number): [number, number] => {
    box[0] = Math.min(box[0], x);
    box[1] = Math.min(box[1], y);
    box[2] = Math.max(box[2], x);
    box[3] = Math.max(box[3], y);
    return [x, y];
  };
  try {
    let pen = 0;
    for (const run of runsByFace(clean, all)) {
      const scale = FONT_SIZE_PX / run.face.unitsPerEm;
      const layout = run.face.layout(run.text);
      layout.glyphs.forEach((glyph, i) => {
        const position = layout.positions[i]!;
        const x0 = pen + position.xOffset * scale;
        const y0 = -position.yOffset * scale;
        const path = new mupdf.Path();
        paths.push(path);
        addOutline(path, glyph.path, (x, y) => point(x0 + x * scale, y0 - y * scale));
        pen += position.xAdvance * scale;
      });
    }
    // Nothing drawn (only characters without an outline): no box.
    if (!(box[2] > box[0] && box[3] > box[1])) throw new AppError('VALIDATION', 'signature is empty');
    const bbox: [number, number, number, number] = [
      Math.floor(box[0]) - MARGIN_PX,
      Math.floor(box[1]) - MARGIN_PX,
      Math.ceil(box[2]) + MARGIN_PX,
      Math.ceil(box[3]) + MARGIN_PX,
    ];
    // The ink's coverage only (one colour): a grey pixmap with alpha, whose alpha is the PNG's.
    const pixmap = new mupdf.Pixmap(mupdf.ColorSpace.DeviceGray, bbox, true);
    try {
      // Without a value: every sample 0, alpha too (a value would make the pixels opaque).
      pixmap.clear();
      fill(mupdf, paths, pixmap);
      const width = pixmap.getWidth();
      const height = pixmap.getHeight();
      return { png: inkPng(width, height, pixmap.getStride(), pixmap.getPixels()), width, height, text: clean };
    } finally {
      pixmap.destroy();
    }
  } finally {
    for (const path of paths) path.destroy();
  }
}

type Mupdf = Awaited<ReturnType<typeof loadMupdf>>;
type MupdfPath = InstanceType<Mupdf['Path']>;

/** Splits text into runs of one face each: the first face that has the character; marks stay with their base. */
function runsByFace(text: string, all: Face[]): { face: Face; text: string }[] {
  const runs: { face: Face; text: string }[] = [];
  for (const char of text) {
    const codePoint = char.codePointAt(0)!;
    const last = runs.at(-1);
    const face =
      last && /\p{M}/u.test(char)
        ? last.face
        : (all.find((f) => f.hasGlyphForCodePoint(codePoint)) ?? all[all.length - 1]!);
    if (last && last.face === face) last.text += char;
    else runs.push({ face, text: char });
  }
  return runs;
}

/** Appends a fontkit glyph outline (font units, y up) to `path`, each point mapped by `to`. */
function addOutline(path: MupdfPath, outline: unknown, to: (x: number, y: number) => [number, number]): void {
  let current: [number, number] = [0, 0];
  const context = {
    moveTo(x: number, y: number) {
      current = to(x, y);
      path.moveTo(...current);
    },
    lineTo(x: number, y: number) {
      current = to(x, y);
      path.lineTo(...current);
    },
    quadraticCurveTo(cx: number, cy: number, x: number, y: number) {
      // A quadratic Bézier as the cubic through the same points (control points at 2/3).
      const [qx, qy] = to(cx, cy);
      const [ex, ey] = to(x, y);
      const [sx, sy] = current;
      path.curveTo(
        sx + (2 / 3) * (qx - sx),
        sy + (2 / 3) * (qy - sy),
        ex + (2 / 3) * (qx - ex),
        ey + (2 / 3) * (qy - ey),
        ex,
        ey,
      );
      current = [ex, ey];
    },
    bezierCurveTo(c1x: number, c1y: number, c2x: number, c2y: number, x: number, y: number) {
      const c1 = to(c1x, c1y);
      const c2 = to(c2x, c2y);
      current = to(x, y);
      path.curveTo(...c1, ...c2, ...current);
    },
    closePath() {
      path.closePath();
    },
  };
  (outline as { toFunction(): (ctx: typeof context) => void }).toFunction()(context);
}

/** Fills `paths` into a grey-and-alpha `pixmap`, opaque (nonzero winding, as fonts are drawn). */
function fill(mupdf: Mupdf, paths: MupdfPath[], pixmap: InstanceType<Mupdf['Pixmap']>): void {
  const device = new mupdf.DrawDevice(mupdf.Matrix.identity, pixmap);
  try {
    for (const path of paths) device.fillPath(path, false, mupdf.Matrix.identity, mupdf.ColorSpace.DeviceGray, [0], 1);
    device.close();
  } finally {
    device.destroy();
  }
}

/**
 * A PNG (RGBA, 8 bits) of the ink colour with the coverage of a grey-and-alpha pixmap as alpha
 * (`samples`: 2 bytes a pixel, alpha second, rows `stride` bytes apart). Written here with node's
 * zlib (PNG, ISO/IEC 15948: signature, IHDR, IDAT of filter-0 rows, IEND): mupdf's own writer
 * deflates in WASM and took most of the time (~4× this for a 59-character name).
 */
function inkPng(width: number, height: number, stride: number, samples: Uint8ClampedArray): Uint8Array {
  const rowBytes = 1 + width * 4;
  const raw = Buffer.alloc(rowBytes * height);
  for (let y = 0; y < height; y++) {
    let o = y * rowBytes + 1; // filter type 0 (none) is the byte before
    let s = y * stride + 1;
    for (let x = 0; x < width; x++, o += 4, s += 2) {
      raw[o] = INK[0];
      raw[o + 1] = INK[1];
      raw[o + 2] = INK[2];
      raw[o + 3] = samples[s]!;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8 bits, RGBA, deflate, adaptive filtering, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', zlib.deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** One PNG chunk: length, type, data, CRC-32 of type and data. */
function pngChunk(type: string, data: Buffer): Buffer {
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  chunk.write(type, 4, 'latin1');
  data.copy(chunk, 8);
  chunk.writeUInt32BE(zlib.crc32(chunk.subarray(4, 8 + data.length)), 8 + data.length);
  return chunk;
}

/** `metadata.typed_text` of a stored file (a typed signature's image), else null. */
export function typedTextOf(metadata: unknown): string | null {
  const text = (metadata as { typed_text?: unknown } | null)?.typed_text;
  return typeof text === 'string' ? text : null;
}
