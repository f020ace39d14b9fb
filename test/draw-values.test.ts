/**
 * src/signing/draw-values.ts on the shared fixture PDFs, checked with real tools: `pdftotext
 * -bbox` says which words are on which page and where (in points on the page as displayed),
 * `pdftoppm` renders pages so images and marks can be located pixel by pixel, and mupdf's
 * structured text gives each line's writing direction (upright text on rotated pages). Also the
 * value formats (dates, numbers, masks) and the timing on the 14-page tracemonkey paper.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as mupdf from 'mupdf';
import { degrees, PDFDocument } from 'pdf-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectPdf, type PdfPageInfo } from '../src/documents/pdf.ts';
import { renderTypedSignature } from '../src/documents/typed-signature.ts';
import { AppError } from '../src/errors.ts';
import { drawValues, MIN_FONT_SIZE, type DrawValuesInput, type ImageFile } from '../src/signing/draw-values.ts';
import { embedDejaVu, loadDejaVu, registerFontkit } from '../src/documents/fonts.ts';
import { formatDate, formatNumber, maskText } from '../src/signing/format-values.ts';
import type { Area, Field } from '../src/templates/fields.ts';
import { fixturePdf } from './helpers/pdfs.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-draw-values-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const DOC = 'doc-uuid';
let fieldCounter = 0;

/** A field of `type` with one area per entry (fractions of the displayed page, page 0-based). */
function field(
  type: string,
  areas: Array<Partial<Area> & Pick<Area, 'x' | 'y' | 'w' | 'h'>>,
  extra: Partial<Field> = {},
): Field {
  fieldCounter += 1;
  return {
    uuid: `field-${fieldCounter}`,
    submitter_uuid: 'party',
    name: `${type} ${fieldCounter}`,
    type,
    required: false,
    preferences: {},
    areas: areas.map((area) => ({ page: 0, attachment_uuid: DOC, ...area })),
    ...extra,
  };
}

async function draw(
  pdf: Uint8Array,
  entries: Array<[Field, unknown]>,
  extra: Partial<DrawValuesInput> & { pages?: PdfPageInfo[] } = {},
): Promise<Uint8Array> {
  const pages = extra.pages ?? (await inspectPdf(pdf, 'test')).pages;
  return drawValues({
    pdf,
    pages,
    attachmentUuid: DOC,
    fields: entries.map(([f]) => f),
    values: Object.fromEntries(entries.map(([f, v]) => [f.uuid, v])),
    images: new Map(),
    ...extra,
  });
}

let fileCounter = 0;
function writeTmp(pdf: Uint8Array): string {
  fileCounter += 1;
  const file = path.join(tmp, `out-${fileCounter}.pdf`);
  fs.writeFileSync(file, pdf);
  return file;
}

interface Word {
  text: string;
  xMin: number;
  yMin: number;
  xMax: number;
  yMax: number;
}

/** `pdftotext -bbox` words of page `page` (0-based): points on the page as displayed, y from the top. */
function words(pdf: Uint8Array, page: number): Word[] {
  const html = execFileSync('pdftotext', [
    '-bbox',
    '-cropbox',
    '-f',
    String(page + 1),
    '-l',
    String(page + 1),
    writeTmp(pdf),
    '-',
  ]).toString();
  const unescapeXml = (s: string) =>
    s
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'")
      .replace(/&amp;/g, '&');
  return [
    ...html.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g),
  ].map((m) => ({
    xMin: Number(m[1]),
    yMin: Number(m[2]),
    xMax: Number(m[3]),
    yMax: Number(m[4]),
    text: unescapeXml(m[5]),
  }));
}

/** Plain text of every page, in order (`pdftotext`, pages separated by form feeds). */
function pageTexts(pdf: Uint8Array): string[] {
  return execFileSync('pdftotext', [writeTmp(pdf), '-'])
    .toString()
    .split('\f');
}

/** The displayed box of an area in points, y from the top (what pdftotext -bbox and renders use). */
function displayedBox(area: Pick<Area, 'x' | 'y' | 'w' | 'h'>, page: { width: number; height: number }) {
  return {
    x0: area.x * page.width,
    y0: area.y * page.height,
    x1: (area.x + area.w) * page.width,
    y1: (area.y + area.h) * page.height,
  };
}

/** Every word of `value` found on the page, each inside `box` (with `slack` points). */
function expectWordsInBox(found: Word[], value: string, box: ReturnType<typeof displayedBox>, slack = 1): Word[] {
  const matched: Word[] = [];
  for (const token of value.split(/\s+/)) {
    // The page may hold the same word elsewhere (the tracemonkey paper has numbers): prefer the one in the box.
    const candidates = found.filter((w) => w.text === token && !matched.includes(w));
    const inside = (w: Word) =>
      w.xMin >= box.x0 - slack && w.xMax <= box.x1 + slack && w.yMin >= box.y0 - slack && w.yMax <= box.y1 + slack;
    const word = candidates.find(inside) ?? candidates[0];
    expect(word, `"${token}" of "${value}" in ${JSON.stringify(found.map((w) => w.text))}`).toBeDefined();
    matched.push(word!);
    expect(word!.xMin, `${token} left`).toBeGreaterThanOrEqual(box.x0 - slack);
    expect(word!.xMax, `${token} right`).toBeLessThanOrEqual(box.x1 + slack);
    expect(word!.yMin, `${token} top`).toBeGreaterThanOrEqual(box.y0 - slack);
    expect(word!.yMax, `${token} bottom`).toBeLessThanOrEqual(box.y1 + slack);
  }
  return matched;
}

function expectNear(actual: number, expected: number, tolerance: number, label?: string): void {
  expect(Math.abs(actual - expected), `${label ?? 'value'}: ${actual} vs ${expected}`).toBeLessThanOrEqual(tolerance);
}

/** A greyscale render of page `page` (0-based) as displayed, `scale` pixels per point. */
interface Raster {
  width: number;
  height: number;
  /** Grey level at a point given in points from the displayed page's top-left. */
  at(x: number, y: number): number;
  /** Bounding box (points) of pixels darker than `threshold` within a region (points). */
  darkBox(
    region: { x0: number; y0: number; x1: number; y1: number },
    threshold?: number,
  ): { x0: number; y0: number; x1: number; y1: number; count: number } | null;
}

function render(pdf: Uint8Array, page: number, scale = 2): Raster {
  const pgm = execFileSync(
    'pdftoppm',
    ['-gray', '-cropbox', '-r', String(72 * scale), '-f', String(page + 1), '-l', String(page + 1), writeTmp(pdf)],
    {
      maxBuffer: 256 << 20,
    },
  );
  const header = /^P5\s+(\d+)\s+(\d+)\s+255\s/.exec(pgm.subarray(0, 50).toString('latin1'));
  if (!header) throw new Error('pdftoppm did not produce a PGM');
  const [width, height, offset] = [Number(header[1]), Number(header[2]), header[0].length];
  const pixel = (px: number, py: number) => pgm[offset + py * width + px];
  return {
    width,
    height,
    at: (x, y) => pixel(Math.min(width - 1, Math.floor(x * scale)), Math.min(height - 1, Math.floor(y * scale))),
    darkBox(region, threshold = 128) {
      let box: { x0: number; y0: number; x1: number; y1: number; count: number } | null = null;
      for (
        let py = Math.max(0, Math.floor(region.y0 * scale));
        py < Math.min(height, Math.ceil(region.y1 * scale));
        py += 1
      ) {
        for (
          let px = Math.max(0, Math.floor(region.x0 * scale));
          px < Math.min(width, Math.ceil(region.x1 * scale));
          px += 1
        ) {
          if (pixel(px, py) >= threshold) continue;
          box ??= { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity, count: 0 };
          box.x0 = Math.min(box.x0, px / scale);
          box.y0 = Math.min(box.y0, py / scale);
          box.x1 = Math.max(box.x1, (px + 1) / scale);
          box.y1 = Math.max(box.y1, (py + 1) / scale);
          box.count += 1;
        }
      }
      return box;
    },
  };
}

/** Lines of page `page` with their writing direction in displayed coordinates (mupdf). */
function lineDirections(pdf: Uint8Array, page: number): Array<{ text: string; dir: [number, number] }> {
  const doc = mupdf.Document.openDocument(pdf, 'application/pdf');
  try {
    const p = doc.loadPage(page);
    const text = p.toStructuredText('preserve-whitespace');
    const lines: Array<{ text: string; dir: [number, number] }> = [];
    text.walk({
      beginLine: (_bbox, _wmode, dir) => lines.push({ text: '', dir: [dir[0], dir[1]] }),
      onChar: (c) => {
        lines[lines.length - 1].text += c;
      },
    });
    return lines;
  } finally {
    doc.destroy();
  }
}

/** A solid black image of width × height pixels, as PNG or JPEG bytes (encoded by mupdf). */
function blackImage(width: number, height: number, kind: 'png' | 'jpeg'): ImageFile {
  const pixmap = new mupdf.Pixmap(mupdf.ColorSpace.DeviceRGB, [0, 0, width, height], false);
  try {
    pixmap.clear(0);
    const bytes = kind === 'png' ? pixmap.asPNG().slice() : pixmap.asJPEG(90).slice();
    return { bytes, contentType: kind === 'png' ? 'image/png' : 'image/jpeg' };
  } finally {
    pixmap.destroy();
  }
}

async function expectAppError(promise: Promise<unknown>, code: string, pattern: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe(code);
  expect((error as AppError).message).toMatch(pattern);
}

const GREEK = 'Ελένη Παπαδοπούλου';
const CYRILLIC = 'Анна Иванова';

describe('text values', () => {
  it.each([
    ['documenso-letter-size.pdf', 612, 792],
    ['documenso-a4-size.pdf', 595, 842],
    ['documenso-tabloid-landscape.pdf', 1224, 792],
  ])('draws Greek and Cyrillic names inside their areas on %s', async (fixture, width, height) => {
    const greek = field('text', [{ x: 0.1, y: 0.1, w: 0.35, h: 0.03 }]);
    const cyrillic = field('text', [{ x: 0.55, y: 0.6, w: 0.3, h: 0.04 }]);
    const out = await draw(fixturePdf(fixture), [
      [greek, GREEK],
      [cyrillic, CYRILLIC],
    ]);
    const found = words(out, 0);
    expectWordsInBox(found, GREEK, displayedBox(greek.areas[0], { width, height }));
    expectWordsInBox(found, CYRILLIC, displayedBox(cyrillic.areas[0], { width, height }));
    // DocuSeal's size: 11 pt when the shorter side is 595–612 pt, 14 pt on tabloid (792): the
    // words' boxes are ascender-to-descender high (1.164 em in DejaVu Sans).
    const expectedSize = Math.floor((Math.min(width, height) / 595) * 11);
    const word = found.find((w) => w.text === 'Анна')!;
    expect(word.yMax - word.yMin).toBeCloseTo(expectedSize * 1.164, 0);
    // The font is embedded, with a Unicode map, as a subset: the 757 kB face adds ~10 kB.
    const fonts = execFileSync('pdffonts', [writeTmp(out)]).toString();
    expect(fonts).toMatch(/DejaVuSans-\d+\s+CID TrueType\s+Identity-H\s+yes\s+\w+\s+yes/);
    expect(out.length).toBeLessThan(30_000);
  });

  it('does not draw a field whose conditions on the party’s values are not met (field conditions)', async () => {
    const choice = field('checkbox', [{ x: 0.1, y: 0.05, w: 0.05, h: 0.03 }]);
    const hidden = field('text', [{ x: 0.1, y: 0.1, w: 0.35, h: 0.03 }], {
      conditions: [{ field_uuid: choice.uuid, action: 'checked' }],
    });
    // A condition on another party's field is left to the completion that kept the value.
    const elsewhere = field('text', [{ x: 0.1, y: 0.2, w: 0.35, h: 0.03 }], {
      conditions: [{ field_uuid: 'other-party-field', action: 'checked' }],
    });
    const out = await draw(fixturePdf('documenso-letter-size.pdf'), [
      [choice, false],
      [hidden, 'Hidden text'],
      [elsewhere, 'Kept text'],
    ]);
    const text = pageTexts(out).join(' ');
    expect(text).not.toContain('Hidden');
    expect(text).toContain('Kept text');
    const shown = await draw(fixturePdf('documenso-letter-size.pdf'), [
      [choice, true],
      [hidden, 'Hidden text'],
    ]);
    expect(pageTexts(shown).join(' ')).toContain('Hidden text');
  });

  it('puts each value on its own page of a two-page document and nowhere else', async () => {
    const pdf = fixturePdf('pdfjs-form_two_pages.pdf');
    const first = field('text', [{ x: 0.1, y: 0.9, w: 0.4, h: 0.03, page: 0 }]);
    const second = field('text', [{ x: 0.5, y: 0.05, w: 0.4, h: 0.03, page: 1 }]);
    const otherDocument = field('text', [
      { x: 0.1, y: 0.5, w: 0.4, h: 0.03, page: 0, attachment_uuid: 'another-document' },
    ]);
    const out = await draw(pdf, [
      [first, 'Zoe Quartermain'],
      [second, CYRILLIC],
      [otherDocument, 'Never drawn'],
    ]);
    const [page1, page2] = pageTexts(out);
    expect(page1).toContain('Zoe Quartermain');
    expect(page1).not.toContain(CYRILLIC);
    expect(page2).toContain(CYRILLIC);
    expect(page2).not.toContain('Zoe Quartermain');
    expect(pageTexts(out).join('')).not.toContain('Never drawn');
    expectWordsInBox(words(out, 1), CYRILLIC, displayedBox(second.areas[0], { width: 612, height: 792 }));
  });

  it(
    'shrinks a long name onto one line in a one-line area, and wraps a paragraph in a tall area, ' + 'inside both',
    async () => {
      const pdf = fixturePdf('documenso-letter-size.pdf');
      const page = { width: 612, height: 792 };
      const name = field('text', [{ x: 0.1, y: 0.1, w: 0.2, h: 0.025 }]); // 122 × 20 pt
      const longName = 'Ελένη-Μαρία Παπαδοπούλου';
      const paragraph = field('text', [{ x: 0.1, y: 0.3, w: 0.3, h: 0.12 }]); // 184 × 95 pt
      const essay =
        `${CYRILLIC} agrees to the terms of this agreement, including every schedule and annex attached hereto, ` +
        'and confirms having read them in full before signing in the presence of a witness.';
      const out = await draw(pdf, [
        [name, longName],
        [paragraph, essay],
      ]);
      const found = words(out, 0);

      const nameWords = expectWordsInBox(found, longName, displayedBox(name.areas[0], page));
      expect(new Set(nameWords.map((w) => w.yMin.toFixed(1))).size).toBe(1); // one line
      const nameSize = (nameWords[0].yMax - nameWords[0].yMin) / 1.164;
      expect(nameSize).toBeLessThan(11);
      expect(nameSize).toBeGreaterThanOrEqual(MIN_FONT_SIZE - 0.1);

      const essayWords = expectWordsInBox(found, essay, displayedBox(paragraph.areas[0], page));
      expect(new Set(essayWords.map((w) => w.yMin.toFixed(1))).size).toBeGreaterThan(3); // wrapped
      // Lines read in order: each line starts at the left padding and lies below the previous one.
      const lineTops = [...new Set(essayWords.map((w) => w.yMin))];
      expect(lineTops).toEqual([...lineTops].sort((a, b) => a - b));
    },
  );

  it('goes below the minimum size only when the value fits nowhere else, still inside the area', async () => {
    const tiny = field('text', [{ x: 0.1, y: 0.1, w: 0.1, h: 0.012 }]); // 61 × 9.5 pt
    const value = 'A very long value for a very small box, kept whole';
    const out = await draw(fixturePdf('documenso-letter-size.pdf'), [[tiny, value]]);
    expectWordsInBox(words(out, 0), value, displayedBox(tiny.areas[0], { width: 612, height: 792 }));
  });

  it('honours font_size, align, valign, color and background', async () => {
    const page = { width: 612, height: 792 };
    const right = field('text', [{ x: 0.1, y: 0.1, w: 0.5, h: 0.05 }], {
      preferences: { align: 'right', valign: 'top', font_size: 16 },
    });
    const centred = field('text', [{ x: 0.1, y: 0.2, w: 0.5, h: 0.05 }], {
      preferences: { align: 'center', valign: 'bottom', color: '#ff0000', background: 'yellow' },
    });
    const out = await draw(fixturePdf('documenso-letter-size.pdf'), [
      [right, 'Right'],
      [centred, 'Centre'],
    ]);
    const found = words(out, 0);
    const r = found.find((w) => w.text === 'Right')!;
    const rBox = displayedBox(right.areas[0], page);
    expect(r.xMax).toBeCloseTo(rBox.x1 - 1, 0);
    expect(r.yMin).toBeCloseTo(rBox.y0 + 1, 0);
    expect(r.yMax - r.yMin).toBeCloseTo(16 * 1.164, 0);
    const c = found.find((w) => w.text === 'Centre')!;
    const cBox = displayedBox(centred.areas[0], page);
    expect((c.xMin + c.xMax) / 2).toBeCloseTo((cBox.x0 + cBox.x1) / 2, 0);
    expect(c.yMax).toBeCloseTo(cBox.y1 - 1, 0);

    // Colours, in an RGB render: yellow background at a corner of the area, red glyphs.
    const file = writeTmp(out);
    const ppm = execFileSync('pdftoppm', ['-r', '72', '-f', '1', '-l', '1', file], { maxBuffer: 64 << 20 });
    const header = /^P6\s+(\d+)\s+(\d+)\s+255\s/.exec(ppm.subarray(0, 50).toString('latin1'))!;
    const rgbAt = (x: number, y: number) => {
      const i = header[0].length + (Math.floor(y) * Number(header[1]) + Math.floor(x)) * 3;
      return [ppm[i], ppm[i + 1], ppm[i + 2]];
    };
    expect(rgbAt(cBox.x0 + 2, cBox.y0 + 2)).toEqual([255, 255, 0]);
    let red = 0;
    for (let y = Math.floor(c.yMin); y < c.yMax; y += 1) {
      for (let x = Math.floor(c.xMin); x < c.xMax; x += 1) {
        const [R, G, B] = rgbAt(x, y);
        if (R > 200 && G < 80 && B < 80) red += 1;
      }
    }
    expect(red).toBeGreaterThan(10);
  });

  it('formats dates, {{date}} in the time zone, numbers, lists and masks as DocuSeal shows them', async () => {
    const date = field('date', [{ x: 0.1, y: 0.1, w: 0.3, h: 0.03 }], { preferences: { format: 'DD.MM.YYYY' } });
    const long = field('date', [{ x: 0.1, y: 0.15, w: 0.3, h: 0.03 }], { preferences: { format: 'D MMMM YYYY' } });
    const today = field('date', [{ x: 0.1, y: 0.2, w: 0.3, h: 0.03 }], { preferences: { format: 'MM/DD/YYYY' } });
    const plain = field('date', [{ x: 0.1, y: 0.25, w: 0.3, h: 0.03 }]);
    const amount = field('number', [{ x: 0.5, y: 0.1, w: 0.3, h: 0.03 }], { preferences: { format: 'usd' } });
    const choices = field('multiple', [{ x: 0.5, y: 0.15, w: 0.3, h: 0.03 }], {
      options: [
        { uuid: 'o1', value: 'Red' },
        { uuid: 'o2', value: 'Blue' },
      ],
    });
    const secret = field('text', [{ x: 0.5, y: 0.2, w: 0.3, h: 0.03 }], { preferences: { mask: -4 } });
    const out = await draw(
      fixturePdf('documenso-letter-size.pdf'),
      [
        [date, '2025-03-07'],
        [long, '2025-03-07'],
        [today, '{{date}}'],
        [plain, '2024-02-29'],
        [amount, 1234.5],
        [choices, ['Red', 'Blue']],
        [secret, '4111-1111-1111-1234'],
      ],
      { now: new Date('2025-01-01T03:00:00Z'), timeZone: 'America/New_York' },
    );
    const text = pageTexts(out)[0];
    expect(text).toContain('07.03.2025');
    expect(text).toContain('7 March 2025');
    expect(text).toContain('12/31/2024'); // 22:00 on 31 December in New York
    expect(text).toContain('29/02/2024'); // default DD/MM/YYYY
    expect(text).toContain('$1,234.50');
    expect(text).toContain('Red, Blue');
    expect(text).toContain('XXXX-XXXX-XXXX-1234');
    expect(text).not.toContain('4111');
  });
});

describe('rotated pages and crop boxes', () => {
  it('draws upright text inside the displayed area on the /Rotate 90 fixture', async () => {
    const pdf = fixturePdf('pdfjs-hello_world_rotated.pdf');
    const info = await inspectPdf(pdf, 'rotated');
    expect(info.pages[0]).toMatchObject({ rotate: 90, width: 792, height: 612 });
    const greek = field('text', [{ x: 0.05, y: 0.1, w: 0.35, h: 0.05 }]);
    const cyrillic = field('text', [{ x: 0.6, y: 0.8, w: 0.3, h: 0.05, page: 2 }]);
    const out = await draw(pdf, [
      [greek, GREEK],
      [cyrillic, CYRILLIC],
    ]);
    const found = words(out, 0);
    const greekWords = expectWordsInBox(found, GREEK, displayedBox(greek.areas[0], info.pages[0]));
    // Horizontal as displayed: each word is wider than tall, and they sit on one line.
    for (const w of greekWords) expect(w.xMax - w.xMin).toBeGreaterThan(w.yMax - w.yMin);
    expect(greekWords[0].yMin).toBeCloseTo(greekWords[1].yMin, 1);
    expectWordsInBox(words(out, 2), CYRILLIC, displayedBox(cyrillic.areas[0], info.pages[2]));
    // Upright: mupdf reads the lines left to right in displayed coordinates; the fixture's own
    // "Hello world" (drawn along the unrotated page) runs downwards.
    const lines = lineDirections(out, 0);
    expect(lines.find((l) => l.text.includes('Ελένη'))?.dir).toEqual([1, 0]);
    expect(lines.find((l) => l.text.includes('Hello'))?.dir).toEqual([0, 1]);
    expect(lineDirections(out, 2).find((l) => l.text.includes('Анна'))?.dir).toEqual([1, 0]);
  });

  it('handles /Rotate 0, 90, 180 and 270 with a crop box away from the origin', async () => {
    const source = await PDFDocument.create();
    for (const rotation of [0, 90, 180, 270]) {
      const page = source.addPage([700, 900]);
      page.setCropBox(50, 60, 500, 780); // x, y, width, height
      page.setRotation(degrees(rotation));
    }
    const pdf = await source.save();
    const info = await inspectPdf(pdf, 'synthetic');
    const entries: Array<[Field, unknown]> = [];
    for (let page = 0; page < 4; page += 1) {
      entries.push([field('text', [{ x: 0.15, y: 0.2, w: 0.5, h: 0.05, page }]), `${CYRILLIC} ${page}`]);
      entries.push([field('checkbox', [{ x: 0.7, y: 0.7, w: 0.06, h: 0.06, page }]), true]);
    }
    const out = await draw(pdf, entries, { pages: info.pages });
    for (let page = 0; page < 4; page += 1) {
      const displayed = info.pages[page];
      expect([displayed.width, displayed.height]).toEqual(page % 2 === 0 ? [500, 780] : [780, 500]);
      const [text, check] = [entries[page * 2][0], entries[page * 2 + 1][0]];
      expectWordsInBox(words(out, page), `${CYRILLIC} ${page}`, displayedBox(text.areas[0], displayed));
      expect(lineDirections(out, page).find((l) => l.text.includes('Анна'))?.dir, `page ${page}`).toEqual([1, 0]);
      const box = displayedBox(check.areas[0], displayed);
      const raster = render(out, page);
      const mark = raster.darkBox({ x0: box.x0 - 20, y0: box.y0 - 20, x1: box.x1 + 20, y1: box.y1 + 20 });
      expect(mark, `check mark on page ${page}`).not.toBeNull();
      expect(mark!.x0).toBeGreaterThanOrEqual(box.x0 - 0.5);
      expect(mark!.x1).toBeLessThanOrEqual(box.x1 + 0.5);
      expect(mark!.y0).toBeGreaterThanOrEqual(box.y0 - 0.5);
      expect(mark!.y1).toBeLessThanOrEqual(box.y1 + 0.5);
    }
  });
});

describe('signatures and images', () => {
  it('scales a PNG signature into its area keeping the aspect ratio, centred', async () => {
    const signature = field('signature', [{ x: 0.1, y: 0.5, w: 0.4, h: 0.1 }]); // 244.8 × 79.2 pt
    const out = await draw(fixturePdf('documenso-letter-size.pdf'), [[signature, 'sig-file']], {
      images: new Map([['sig-file', blackImage(400, 100, 'png')]]),
    });
    const box = displayedBox(signature.areas[0], { width: 612, height: 792 });
    const raster = render(out, 0);
    const ink = raster.darkBox({ x0: 0, y0: 0, x1: 612, y1: 792 })!;
    // Width-limited: 244.8 pt wide, 61.2 pt high (4 : 1), 9 pt of margin above and below.
    expectNear(ink.x0, box.x0, 1, 'left');
    expectNear(ink.x1, box.x1, 1, 'right');
    expectNear(ink.y0, box.y0 + 9, 1, 'top');
    expectNear(ink.y1, box.y1 - 9, 1, 'bottom');
    expectNear((ink.x1 - ink.x0) / (ink.y1 - ink.y0), 4, 0.1, 'aspect ratio');
    expect(raster.at(box.x0 + 10, box.y0 + 3)).toBeGreaterThan(200); // area margin stays white
    expect(raster.at(box.x0 + 10, box.y0 + 40)).toBeLessThan(50);
  });

  it('draws a JPEG image upright and height-limited on a rotated page', async () => {
    const pdf = fixturePdf('pdfjs-hello_world_rotated.pdf');
    const info = await inspectPdf(pdf, 'rotated');
    const image = field('image', [{ x: 0.05, y: 0.6, w: 0.3, h: 0.2 }]); // 237.6 × 122.4 pt
    const out = await draw(pdf, [[image, 'photo']], { images: new Map([['photo', blackImage(100, 200, 'jpeg')]]) });
    const box = displayedBox(image.areas[0], info.pages[0]);
    const ink = render(out, 0).darkBox({ x0: box.x0 - 10, y0: box.y0 - 10, x1: box.x1 + 10, y1: box.y1 + 10 })!;
    // Height-limited: 61.2 × 122.4 pt (1 : 2), centred horizontally.
    expectNear(ink.y0, box.y0, 1, 'top');
    expectNear(ink.y1, box.y1, 1, 'bottom');
    expectNear(ink.x1 - ink.x0, 61.2, 1.5, 'width');
    expectNear((ink.x0 + ink.x1) / 2, (box.x0 + box.x1) / 2, 1, 'centre');
  });

  it('draws a typed signature as the image rendered from its text, fitted and centred in the area', async () => {
    const signature = field('signature', [{ x: 0.1, y: 0.5, w: 0.4, h: 0.08 }]);
    const typed = await renderTypedSignature('Ada Lovelace');
    const out = await draw(fixturePdf('documenso-a4-size.pdf'), [[signature, 'typed']], {
      images: new Map([['typed', { bytes: typed.png, contentType: 'image/png' }]]),
    });
    // An image (its ink, with its transparency as a soft mask), and no text.
    expect(words(out, 0).map((w) => w.text)).not.toContain('Ada');
    const images = execFileSync('pdfimages', ['-list', writeTmp(out)])
      .toString()
      .trim()
      .split('\n')
      .slice(2)
      .map((line) => line.trim().split(/\s+/))
      .map((cells) => `${cells[2]} ${cells[3]}x${cells[4]}`);
    expect(images).toEqual([`image ${typed.width}x${typed.height}`, `smask ${typed.width}x${typed.height}`]);
    const box = displayedBox(signature.areas[0], { width: 595, height: 842 });
    const ink = render(out, 0).darkBox({ x0: box.x0 - 10, y0: box.y0 - 10, x1: box.x1 + 10, y1: box.y1 + 10 })!;
    // Inside the area, centred, as wide as its aspect ratio lets it be (the name is wider than the area's ratio).
    expect(ink.x0).toBeGreaterThanOrEqual(box.x0 - 0.5);
    expect(ink.x1).toBeLessThanOrEqual(box.x1 + 0.5);
    expectNear((ink.x0 + ink.x1) / 2, (box.x0 + box.x1) / 2, 3, 'centre');
    expect((ink.x1 - ink.x0) / (box.x1 - box.x0)).toBeGreaterThan(0.9);
  });
});

describe('checkboxes, options and cells', () => {
  it('marks a checked checkbox inside its area and draws nothing for an unchecked one', async () => {
    const checked = field('checkbox', [{ x: 0.2, y: 0.2, w: 0.03, h: 0.02 }]);
    const unchecked = field('checkbox', [{ x: 0.3, y: 0.2, w: 0.03, h: 0.02 }]);
    const out = await draw(fixturePdf('documenso-letter-size.pdf'), [
      [checked, true],
      [unchecked, false],
    ]);
    const raster = render(out, 0, 4);
    const box = displayedBox(checked.areas[0], { width: 612, height: 792 });
    const mark = raster.darkBox({ x0: box.x0 - 10, y0: box.y0 - 10, x1: box.x1 + 10, y1: box.y1 + 10 })!;
    expect(mark.count).toBeGreaterThan(50);
    expect(mark.x0).toBeGreaterThanOrEqual(box.x0);
    expect(mark.x1).toBeLessThanOrEqual(box.x1);
    expect(mark.y0).toBeGreaterThanOrEqual(box.y0);
    expect(mark.y1).toBeLessThanOrEqual(box.y1);
    const other = displayedBox(unchecked.areas[0], { width: 612, height: 792 });
    expect(raster.darkBox({ x0: other.x0 - 5, y0: other.y0 - 5, x1: other.x1 + 5, y1: other.y1 + 5 })).toBeNull();
  });

  it('marks the chosen option areas of radio and multiple fields ("Option N" for unnamed options)', async () => {
    const options = [
      { uuid: 'a', value: 'Alpha' },
      { uuid: 'b', value: '' },
      { uuid: 'c', value: 'Gamma' },
    ];
    const optionAreas = (y: number) =>
      options.map((o, i) => ({ x: 0.1 + i * 0.1, y, w: 0.03, h: 0.03, option_uuid: o.uuid }));
    const radio = field('radio', optionAreas(0.2), { options });
    const multiple = field('multiple', optionAreas(0.4), { options });
    const out = await draw(fixturePdf('documenso-letter-size.pdf'), [
      [radio, 'Option 2'],
      [multiple, ['Alpha', 'Gamma']],
    ]);
    const raster = render(out, 0);
    const marked = (area: Area) => raster.darkBox(displayedBox(area, { width: 612, height: 792 })) !== null;
    expect(radio.areas.map(marked)).toEqual([false, true, false]);
    expect(multiple.areas.map(marked)).toEqual([true, false, true]);
    expect(pageTexts(out)[0].trim()).toBe(''); // marks, not text
  });

  it('draws cells one character per cell of cell_w, or split evenly without it', async () => {
    const page = { width: 612, height: 792 };
    const cells = field('cells', [{ x: 0.1, y: 0.2, w: 0.4, h: 0.03, cell_w: 0.05 }]);
    const even = field('cells', [{ x: 0.1, y: 0.3, w: 0.3, h: 0.03 }]);
    const right = field('cells', [{ x: 0.1, y: 0.4, w: 0.4, h: 0.03, cell_w: 0.05 }], {
      preferences: { align: 'right' },
    });
    const out = await draw(fixturePdf('documenso-letter-size.pdf'), [
      [cells, 'AB12Я'],
      [even, 'XYZ'],
      [right, '789'],
    ]);
    const found = words(out, 0);
    const centreOf = (w: Word) => (w.xMin + w.xMax) / 2;
    const inRow = (area: Area) => {
      const box = displayedBox(area, page);
      return found.filter((w) => w.yMin >= box.y0 - 1 && w.yMax <= box.y1 + 1);
    };
    const row = inRow(cells.areas[0]);
    expect(row.map((w) => w.text)).toEqual(['A', 'B', '1', '2', 'Я']);
    row.forEach((w, i) => {
      expect(centreOf(w)).toBeCloseTo((0.1 + 0.05 * i + 0.025) * 612, 0);
    });
    const evenRow = inRow(even.areas[0]);
    expect(evenRow.map((w) => w.text)).toEqual(['X', 'Y', 'Z']);
    evenRow.forEach((w, i) => {
      expect(centreOf(w)).toBeCloseTo((0.1 + 0.1 * i + 0.05) * 612, 0);
    });
    const rightRow = inRow(right.areas[0]);
    expect(rightRow.map((w) => w.text)).toEqual(['7', '8', '9']);
    rightRow.forEach((w, i) => {
      expect(centreOf(w)).toBeCloseTo((0.5 - 0.05 * (3 - i) + 0.025) * 612, 0);
    });
  });
});

describe('parties and errors', () => {
  it("keeps the first party's values when the second party draws on its output", async () => {
    const page = { width: 612, height: 792 };
    const first = field('text', [{ x: 0.1, y: 0.1, w: 0.4, h: 0.03 }], { submitter_uuid: 'first' });
    const firstSignature = field('signature', [{ x: 0.1, y: 0.7, w: 0.3, h: 0.08 }], { submitter_uuid: 'first' });
    const second = field('text', [{ x: 0.1, y: 0.2, w: 0.4, h: 0.03 }], { submitter_uuid: 'second' });
    const secondCheck = field('checkbox', [{ x: 0.6, y: 0.2, w: 0.03, h: 0.03 }], { submitter_uuid: 'second' });
    const original = fixturePdf('documenso-letter-size.pdf');
    const { pages } = await inspectPdf(original, 'original');
    const images = new Map([['first-signature', blackImage(300, 100, 'png')]]);
    const fields = [first, firstSignature, second, secondCheck];
    const afterFirst = await drawValues({
      pdf: original,
      pages,
      attachmentUuid: DOC,
      fields,
      values: { [first.uuid]: GREEK, [firstSignature.uuid]: 'first-signature' },
      images,
    });
    const afterSecond = await drawValues({
      pdf: afterFirst,
      pages,
      attachmentUuid: DOC,
      fields,
      values: { [second.uuid]: CYRILLIC, [secondCheck.uuid]: true },
      images: new Map(),
    });
    const found = words(afterSecond, 0);
    expectWordsInBox(found, GREEK, displayedBox(first.areas[0], page));
    expectWordsInBox(found, CYRILLIC, displayedBox(second.areas[0], page));
    const raster = render(afterSecond, 0);
    expect(raster.darkBox(displayedBox(firstSignature.areas[0], page))!.count).toBeGreaterThan(1000);
    expect(raster.darkBox(displayedBox(secondCheck.areas[0], page))).not.toBeNull();
    expect(execFileSync('pdfinfo', [writeTmp(afterSecond)]).toString()).toMatch(/Pages:\s+1/);
  });

  it('returns the document unchanged when the party has nothing on it', async () => {
    const pdf = fixturePdf('documenso-letter-size.pdf');
    const elsewhere = field('text', [{ x: 0.1, y: 0.1, w: 0.3, h: 0.03, attachment_uuid: 'other' }]);
    const empty = field('text', [{ x: 0.1, y: 0.2, w: 0.3, h: 0.03 }]);
    const file = field('file', [{ x: 0.1, y: 0.3, w: 0.3, h: 0.03 }]);
    const out = await draw(pdf, [
      [elsewhere, 'x'],
      [empty, ''],
      [file, ['file-uuid']],
    ]);
    expect(out).toBe(pdf);
  });

  it('refuses missing or unsupported images, areas off the document and unknown time zones', async () => {
    const pdf = fixturePdf('documenso-letter-size.pdf');
    const signature = field('signature', [{ x: 0.1, y: 0.1, w: 0.3, h: 0.1 }]);
    await expectAppError(draw(pdf, [[signature, 'nowhere']]), 'NOT_FOUND', /image nowhere .*not provided/);
    const gif = { bytes: new TextEncoder().encode('GIF89a........'), contentType: 'image/gif' };
    await expectAppError(
      draw(pdf, [[signature, 'gif']], { images: new Map([['gif', gif]]) }),
      'VALIDATION',
      /neither PNG nor JPEG/,
    );
    const offPage = field('text', [{ x: 0.1, y: 0.1, w: 0.3, h: 0.1, page: 3 }]);
    await expectAppError(draw(pdf, [[offPage, 'x']]), 'VALIDATION', /page 3 .* 1 page/);
    await expectAppError(
      draw(pdf, [[field('text', [{ x: 0.1, y: 0.1, w: 0.3, h: 0.1 }]), 'x']], { timeZone: 'Mars/Olympus' }),
      'VALIDATION',
      /unknown time zone/,
    );
  });
});

describe('value formats', () => {
  const now = new Date('2025-06-09T14:05:09Z');

  it('formats every date token (reference §11)', () => {
    expect(formatDate('2025-03-07', 'D/M/YY')).toBe('7/3/25');
    expect(formatDate('2025-03-07', 'MMM DD, YYYY')).toBe('Mar 07, 2025');
    expect(formatDate('2025-03-07', 'MMMM D YYY')).toBe('March 7 2025');
    expect(formatDate('2025-03', 'MM/YYYY')).toBe('03/2025');
    expect(formatDate('2025-06-09T14:05:09Z', 'YYYY-MM-DD HH:mm:ss z', { timeZone: 'Europe/Athens' })).toBe(
      '2025-06-09 17:05:09 GMT+3',
    );
    expect(formatDate('2025-06-09T14:05:09Z', 'h:m:s a / hh A / H', { timeZone: 'UTC' })).toBe('2:5:9 pm / 02 PM / 14');
    expect(formatDate('{{date}}', 'DD/MM/YYYY HH:mm', { now, timeZone: 'Asia/Tokyo' })).toBe('09/06/2025 23:05');
    expect(formatDate(1741305600, 'DD/MM/YYYY')).toBe('07/03/2025'); // unix seconds
    expect(formatDate('2025-03-07', undefined)).toBe('07/03/2025');
    expect(formatDate('2025-03-07', undefined, { locale: 'en-US' })).toBe('03/07/2025');
    expect(formatDate('2025-03-07', 'D MMMM YYYY', { locale: 'de-DE' })).toBe('7 März 2025');
    expect(formatDate('next Tuesday', 'DD/MM/YYYY')).toBe('next Tuesday'); // unparsable: as given
    // A calendar date does not move with the time zone.
    expect(formatDate('2025-03-07', 'DD/MM/YYYY', { timeZone: 'Pacific/Kiritimati' })).toBe('07/03/2025');
  });

  it('formats numbers (comma, dot, space, usd, eur, gbp, percent)', () => {
    expect(formatNumber(1234567.891, 'comma')).toBe('1,234,567.891');
    expect(formatNumber(1234567.891, 'dot')).toBe('1.234.567,891');
    expect(formatNumber(1234567.891, 'space')).toBe('1 234 567,891');
    expect(formatNumber(1234.5, 'usd')).toBe('$1,234.50');
    expect(formatNumber(1234.5, 'eur')).toBe('1 234,50 €');
    expect(formatNumber(1234.5, 'gbp')).toBe('£1,234.50');
    expect(formatNumber(12.5, 'percent')).toBe('12.5%');
    expect(formatNumber(12.5, 'percent_space')).toBe('12,5 %'); // DocuSeal: tr('.', ',')
    expect(formatNumber('42', 'comma')).toBe('42');
    expect(formatNumber(1234.5, undefined)).toBe('1234.5');
    expect(formatNumber('n/a', 'usd')).toBe('n/a');
  });

  it('masks values as DocuSeal does', () => {
    expect(maskText('4111-1111 (1234)', true)).toBe('XXXX-XXXX (XXXX)');
    expect(maskText('secret', 2)).toBe('seXXXX');
    expect(maskText('secret', -2)).toBe('XXXXet');
    expect(maskText('Анна', 10)).toBe('XXXX');
    expect(maskText('plain', false)).toBe('plain');
    expect(maskText('plain', undefined)).toBe('plain');
  });
});

describe('fonts, parsed once per process and shared by every document', () => {
  it('extracts Latin letters drawn after a document whose Cyrillic letters are composites of them', async () => {
    // DejaVu draws Cyrillic "а" and "о" as Latin "a" and "o" placed whole: writing the first
    // document's subset touches the Latin glyphs, which must keep their code points.
    const cyrillic = field('text', [{ x: 0.1, y: 0.1, w: 0.5, h: 0.04 }]);
    const latin = field('text', [{ x: 0.1, y: 0.1, w: 0.5, h: 0.04 }]);
    const first = await draw(fixturePdf('documenso-letter-size.pdf'), [[cyrillic, 'оаео ОАЕО']]);
    const second = await draw(fixturePdf('documenso-letter-size.pdf'), [[latin, 'Zoe Quartermain oaeo']]);
    expect(pageTexts(first)[0]).toContain('оаео ОАЕО');
    expect(pageTexts(second)[0]).toContain('Zoe Quartermain oaeo');
  });

  it("measure exactly what pdf-lib's widthOfTextAtSize measures, for plain and for complex text", async () => {
    // Plain characters (summed advances) and ones that go through fontkit's layout: combining
    // marks, a soft hyphen, Arabic, Hebrew, CJK (not in DejaVu), an emoji, "fi" and "ffl".
    const plain = [
      ...('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ' +
        '.,;:!?-–—()[]{}@#$%&*/\\\'"€£¥©®°±×÷ÀÉÎÕÜßàéîõüçñĄęŁőűŽǅΑΒΓΔαβγδάέήίΏΪϋАБВГДабвгдЁёЇїЄєҐґ'),
    ];
    const complex = ['e\u0301', 'i\u0308', '\u00ad', 'عربي', 'עברית', '漢字', '🙂', 'fi', 'ffl'];
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const samples = ['Ελένη Παπαδοπούλου', 'Анна Иванова', 'Zoë Ångström', 'office fluffy', ...complex];
    for (let i = 0; i < 300; i += 1) {
      const length = 1 + random(30);
      let text = '';
      for (let j = 0; j < length; j += 1)
        text += random(10) === 0 ? complex[random(complex.length)] : plain[random(plain.length)];
      samples.push(text);
    }
    for (const name of ['DejaVuSans', 'DejaVuSerif-Italic', 'DejaVuSansMono-Bold']) {
      const doc = await PDFDocument.create();
      registerFontkit(doc);
      const { pdfFont, width } = await embedDejaVu(doc, await loadDejaVu(name));
      for (const text of samples)
        expect(width(text, 11), `${name}: ${JSON.stringify(text)}`).toBeCloseTo(pdfFont.widthOfTextAtSize(text, 11), 9);
    }
  });
});

describe('timing', () => {
  it('draws 30 text fields and 2 signature images on the 14-page tracemonkey paper', async () => {
    const pdf = fixturePdf('pdfjs-tracemonkey.pdf');
    const { pages } = await inspectPdf(pdf, 'tracemonkey');
    expect(pages).toHaveLength(14);
    const names = [GREEK, CYRILLIC, 'Jean-Luc Picard', 'Zoë Ångström', 'Ada Lovelace'];
    const entries: Array<[Field, unknown]> = [];
    for (let i = 0; i < 30; i += 1) {
      const page = i % 14;
      entries.push([
        field('text', [{ x: 0.1 + (i % 2) * 0.45, y: 0.05 + Math.floor(i / 14) * 0.04, w: 0.35, h: 0.025, page }]),
        `${names[i % names.length]} ${i}`,
      ]);
    }
    entries.push([field('signature', [{ x: 0.1, y: 0.85, w: 0.3, h: 0.08, page: 13 }]), 'sig-1']);
    entries.push([field('signature', [{ x: 0.55, y: 0.85, w: 0.3, h: 0.08, page: 13 }]), 'sig-2']);
    const images = new Map([
      ['sig-1', blackImage(600, 200, 'png')],
      ['sig-2', blackImage(600, 200, 'png')],
    ]);
    const timings: number[] = [];
    let out: Uint8Array = pdf;
    for (let run = 0; run < 3; run += 1) {
      const started = performance.now();
      out = await draw(pdf, entries, { pages, images });
      timings.push(performance.now() - started);
    }
    console.log(
      `drawValues on pdfjs-tracemonkey.pdf (14 pages, ${(pdf.length / 1e6).toFixed(2)} MB), 30 text fields + 2 ` +
        `signature images: ` +
        `${timings.map((t) => `${t.toFixed(0)} ms`).join(', ')} (runs 1–3); output ${(out.length / 1e6).toFixed(2)} MB`,
    );
    // Speed targets are the benchmarks' (bench/); this test checks what was drawn.
    const pageWords = new Map<number, Word[]>();
    for (const [f, value] of entries.slice(0, 30)) {
      const page = f.areas[0].page;
      if (!pageWords.has(page)) pageWords.set(page, words(out, page));
      expectWordsInBox(pageWords.get(page)!, value as string, displayedBox(f.areas[0], pages[page]));
    }
  });
});
