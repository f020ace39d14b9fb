/**
 * src/documents/pdf.ts against the shared fixtures and the real tools: page facts checked against
 * `pdfinfo`, previews decoded from their PNG bytes, and areas drawn back onto pages with pdf-lib
 * and located in `pdftoppm`'s rendering (issue 3: "a test draws the areas back onto the page and
 * checks where they land").
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import * as mupdf from 'mupdf';
import { degrees, PDFDocument, rgb, StandardFonts } from 'pdf-lib';
import { afterAll, describe, expect, it } from 'vitest';
import {
  displayToUserMatrix,
  fractionsToPdfRect,
  fractionsToPoints,
  inspectPdf,
  pointsToFractions,
  renderPagePng,
  rewritePdf,
  type PdfPage,
  type PdfPageInfo,
} from '../src/documents/pdf.ts';
import { AppError } from '../src/errors.ts';

const FIXTURES = path.join(import.meta.dirname, '..', '..', 'shared', 'fixtures', 'pdf');
const fixturePdf = (name: string): Buffer => fs.readFileSync(path.join(FIXTURES, name));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-pdf-test-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Pages as `pdfinfo -f 1 -l N` reports them: size (unrotated) and rotation. */
function pdfinfoPages(file: string): Array<{ width: number; height: number; rot: number }> {
  const out = execFileSync('pdfinfo', ['-f', '1', '-l', '1000', file]).toString();
  const pages: Array<{ width: number; height: number; rot: number }> = [];
  for (const m of out.matchAll(/^Page\s+(\d+) size:\s+([\d.]+) x ([\d.]+) pts/gm)) {
    pages[Number(m[1]) - 1] = { width: Number(m[2]), height: Number(m[3]), rot: 0 };
  }
  for (const m of out.matchAll(/^Page\s+(\d+) rot:\s+(\d+)/gm)) pages[Number(m[1]) - 1].rot = Number(m[2]);
  return pages;
}

async function expectValidation(promise: Promise<unknown> | (() => unknown), pattern: RegExp): Promise<void> {
  let error: unknown;
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (caught) {
    error = caught;
  }
  expect(error, `expected a 422 matching ${pattern}`).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe('VALIDATION');
  expect((error as AppError).status).toBe(422);
  expect((error as AppError).message).toMatch(pattern);
}

/** An RGB raster: `pixel(x, y)` → [r, g, b]. */
interface Raster {
  width: number;
  height: number;
  pixel(x: number, y: number): [number, number, number];
}

/** Renders page 1 of a PDF as displayed (CropBox, /Rotate) with poppler at 72 dpi: 1 pixel = 1 point. */
function renderWithPoppler(pdf: Uint8Array, name: string): Raster {
  const file = path.join(tmp, `${name}.pdf`);
  fs.writeFileSync(file, pdf);
  const ppm = execFileSync('pdftoppm', ['-r', '72', '-cropbox', '-f', '1', '-l', '1', file], { maxBuffer: 64 << 20 });
  const header = /^P6\s+(\d+)\s+(\d+)\s+255\s/.exec(ppm.subarray(0, 50).toString('latin1'));
  if (!header) throw new Error('pdftoppm did not produce a PPM');
  const [width, height, offset] = [Number(header[1]), Number(header[2]), header[0].length];
  return {
    width,
    height,
    pixel: (x, y) => {
      const i = offset + (Math.round(y) * width + Math.round(x)) * 3;
      return [ppm[i], ppm[i + 1], ppm[i + 2]];
    },
  };
}

/** Decodes an 8-bit, non-interlaced greyscale/RGB/RGBA PNG (what mupdf writes). */
function decodePng(png: Buffer): Raster {
  expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.subarray(offset + 4, offset + 8).toString('latin1');
    const data = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      expect(data[8]).toBe(8); // bit depth
      expect(data[12]).toBe(0); // not interlaced
      channels = { 0: 1, 2: 3, 4: 2, 6: 4 }[data[9]] ?? 0;
    }
    if (type === 'IDAT') idat.push(data);
    offset += 12 + length;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y += 1) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x += 1) {
      const value = raw[y * (stride + 1) + 1 + x];
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      const p = a + b - c;
      const paeth =
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
          ? a
          : Math.abs(p - b) <= Math.abs(p - c)
            ? b
            : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter];
      out[y * stride + x] = (value + predictor) & 0xff;
    }
  }
  return {
    width,
    height,
    pixel: (x, y) => {
      const i = Math.round(y) * stride + Math.round(x) * channels;
      return channels < 3 ? [out[i], out[i], out[i]] : [out[i], out[i + 1], out[i + 2]];
    },
  };
}

const isRed = ([r, g, b]: number[]) => r > 200 && g < 60 && b < 60;
const isDark = ([r, g, b]: number[]) => r + g + b < 300;

describe('inspectPdf', () => {
  it('reads page counts and displayed sizes of every fixture as pdfinfo does', async () => {
    const files = fs.readdirSync(FIXTURES).filter((f) => f.endsWith('.pdf'));
    expect(files.length).toBeGreaterThanOrEqual(8);
    for (const file of files) {
      const info = await inspectPdf(fs.readFileSync(path.join(FIXTURES, file)), file);
      const expected = pdfinfoPages(path.join(FIXTURES, file));
      expect(info.pageCount, file).toBe(expected.length);
      expect(info.pages, file).toHaveLength(expected.length);
      info.pages.forEach((page, i) => {
        const quarter = expected[i].rot % 180 === 90;
        expect(page.rotate, `${file} page ${i + 1}`).toBe(expected[i].rot);
        expect(page.width, `${file} page ${i + 1}`).toBeCloseTo(quarter ? expected[i].height : expected[i].width, 0);
        expect(page.height, `${file} page ${i + 1}`).toBeCloseTo(quarter ? expected[i].width : expected[i].height, 0);
      });
      expect(info.encrypted, file).toBe(false);
      expect(info.repaired, file).toBe(false);
    }
  });

  it('gives Letter, A4, Tabloid landscape and the rotated page their displayed sizes', async () => {
    const first = async (name: string) => (await inspectPdf(fixturePdf(name), name)).pages[0];
    expect(await first('documenso-letter-size.pdf')).toMatchObject({ width: 612, height: 792, rotate: 0 });
    const a4 = await first('documenso-a4-size.pdf');
    expect(a4.width).toBeCloseTo(595, 0);
    expect(a4.height).toBeCloseTo(842, 0);
    expect(await first('documenso-tabloid-landscape.pdf')).toMatchObject({ width: 1224, height: 792, rotate: 0 });
    // pdfinfo: "Page 1 size: 612 x 792 pts (letter)", "Page 1 rot: 90" → landscape as displayed.
    const rotated = await inspectPdf(fixturePdf('pdfjs-hello_world_rotated.pdf'), 'rotated');
    expect(rotated.pageCount).toBe(5);
    expect(rotated.pages[0]).toEqual({ width: 792, height: 612, rotate: 90, cropBox: [0, 0, 612, 792] });
    expect((await inspectPdf(fixturePdf('pdfjs-tracemonkey.pdf'), 'tracemonkey')).pageCount).toBe(14);
  });

  it('reads non-zero box origins, CropBox clipping and every /Rotate, as mupdf displays them', async () => {
    const doc = await PDFDocument.create();
    const specs = [
      { rotate: 0, media: [0, 0, 600, 800], crop: undefined },
      { rotate: 90, media: [-50, 100, 550, 900], crop: undefined },
      { rotate: 180, media: [0, 0, 600, 800], crop: [30, 40, 530, 740] },
      { rotate: 270, media: [10, 20, 610, 820], crop: [0, 0, 400, 500] }, // crop clipped to media
      { rotate: -90, media: [0, 0, 300, 200], crop: undefined }, // -90 ≡ 270
    ];
    for (const spec of specs) {
      const page = doc.addPage([100, 100]);
      const [x0, y0, x1, y1] = spec.media;
      page.setMediaBox(x0, y0, x1 - x0, y1 - y0);
      if (spec.crop)
        page.setCropBox(spec.crop[0], spec.crop[1], spec.crop[2] - spec.crop[0], spec.crop[3] - spec.crop[1]);
      page.setRotation(degrees(spec.rotate));
    }
    const bytes = await doc.save();
    const info = await inspectPdf(bytes, 'boxes.pdf');
    expect(info.pages.map((p) => p.rotate)).toEqual([0, 90, 180, 270, 270]);
    expect(info.pages[1]).toMatchObject({ width: 800, height: 600, cropBox: [-50, 100, 550, 900] });
    expect(info.pages[2]).toMatchObject({ width: 500, height: 700, cropBox: [30, 40, 530, 740] });
    expect(info.pages[3]).toMatchObject({ width: 480, height: 390, cropBox: [10, 20, 400, 500] });
    expect(info.pages[4]).toMatchObject({ width: 200, height: 300 });

    // The display → user-space matrix is the inverse of mupdf's page transform on every page.
    const mdoc = new mupdf.PDFDocument(bytes);
    info.pages.forEach((page, i) => {
      const mpage = mdoc.loadPage(i);
      const [bx0, by0, bx1, by1] = mpage.getBounds();
      expect([bx1 - bx0, by1 - by0]).toEqual([page.width, page.height]);
      const toDisplay = mupdf.Matrix.concat(mpage.getTransform(), mupdf.Matrix.translate(-bx0, -by0));
      const roundTrip = mupdf.Matrix.concat(displayToUserMatrix(page), toDisplay);
      roundTrip.forEach((value, k) => {
        expect(value, `page ${i + 1}`).toBeCloseTo(mupdf.Matrix.identity[k], 6);
      });
    });
  });

  it(
    'refuses empty bytes, non-PDFs, damaged, ' + 'encrypted and page-less PDFs with a 422 naming the document',
    async () => {
      await expectValidation(inspectPdf(new Uint8Array(), 'documents[0]'), /^documents\[0\] is empty$/);
      const random = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 251);
      await expectValidation(inspectPdf(random, 'documents[1]'), /^documents\[1\] is not a PDF/);
      await expectValidation(
        inspectPdf(Buffer.concat([Buffer.from('%PDF-1.7\n'), random]), 'junk.pdf'),
        /^junk\.pdf is not a valid PDF: its structure cannot be parsed/,
      );
      const tracemonkey = fixturePdf('pdfjs-tracemonkey.pdf');
      await expectValidation(
        inspectPdf(tracemonkey.subarray(0, tracemonkey.length >> 1), 'half.pdf'),
        /^half\.pdf is not a valid PDF: it is damaged/,
      );

      const letter = new mupdf.PDFDocument(fixturePdf('documenso-letter-size.pdf'));
      const locked = letter
        .saveToBuffer('encrypt=aes-256,user-password=secret,owner-password=owner')
        .asUint8Array()
        .slice();
      fs.writeFileSync(path.join(tmp, 'locked.pdf'), locked);
      expect(execFileSync('pdfinfo', ['-upw', 'secret', path.join(tmp, 'locked.pdf')]).toString()).toMatch(
        /Encrypted:\s+yes/,
      );
      await expectValidation(
        inspectPdf(locked, 'locked.pdf'),
        /^locked\.pdf is an encrypted PDF protected by a password/,
      );

      const noPages = await (await PDFDocument.create()).save({ addDefaultPage: false });
      await expectValidation(inspectPdf(noPages, 'blank.pdf'), /^blank\.pdf is a PDF with no pages$/);
    },
  );

  it('accepts a PDF encrypted with an owner password only, and rewritePdf makes it editable by pdf-lib', async () => {
    const letter = new mupdf.PDFDocument(fixturePdf('documenso-letter-size.pdf'));
    const restricted = letter.saveToBuffer('encrypt=rc4-128,owner-password=owner').asUint8Array().slice();
    const info = await inspectPdf(restricted, 'restricted.pdf');
    expect(info).toMatchObject({ pageCount: 1, encrypted: true });
    await expect(PDFDocument.load(restricted)).rejects.toThrow(/encrypted/i);
    const plain = await rewritePdf(restricted, 'restricted.pdf');
    expect((await inspectPdf(plain, 'plain.pdf')).encrypted).toBe(false);
    expect((await PDFDocument.load(plain)).getPageCount()).toBe(1);
  });
});

describe('renderPagePng', () => {
  it('renders pages 1400 px wide with the displayed aspect ratio', async () => {
    const cases: Array<[string, number, number]> = [
      ['documenso-letter-size.pdf', 0, Math.round((1400 * 792) / 612)],
      ['documenso-a4-size.pdf', 0, Math.round((1400 * 842) / 595)],
      ['documenso-tabloid-landscape.pdf', 0, Math.round((1400 * 792) / 1224)],
      ['pdfjs-hello_world_rotated.pdf', 0, Math.round((1400 * 612) / 792)], // landscape as displayed
      ['pdfjs-tracemonkey.pdf', 13, Math.round((1400 * 792) / 612)],
    ];
    for (const [file, page, height] of cases) {
      const png = await renderPagePng(fixturePdf(file), page);
      expect(png.subarray(12, 16).toString('latin1'), file).toBe('IHDR');
      expect(png.readUInt32BE(16), file).toBe(1400);
      expect(png.readUInt32BE(20), file).toBe(height);
    }
    const small = await renderPagePng(fixturePdf('documenso-a4-size.pdf'), 0, 300);
    expect([small.readUInt32BE(16), small.readUInt32BE(20)]).toEqual([300, Math.round((300 * 842) / 595)]);
  });

  it('draws the rotated page as displayed: the text runs top to bottom as poppler shows it', async () => {
    const bytes = fixturePdf('pdfjs-hello_world_rotated.pdf');
    const ours = decodePng(await renderPagePng(bytes, 0, 792)); // 1 px = 1 pt
    const poppler = renderWithPoppler(bytes, 'rotated');
    expect([poppler.width, poppler.height]).toEqual([792, 612]);
    expect([ours.width, ours.height]).toEqual([792, 612]);
    const inkBox = (r: Raster) => {
      let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
      for (let y = 0; y < r.height; y += 2) {
        for (let x = 0; x < r.width; x += 2) {
          if (!isDark(r.pixel(x, y))) continue;
          [x0, y0, x1, y1] = [Math.min(x0, x), Math.min(y0, y), Math.max(x1, x), Math.max(y1, y)];
        }
      }
      return [x0, y0, x1, y1];
    };
    const [ox0, oy0, ox1, oy1] = inkBox(ours);
    expect(oy1 - oy0).toBeGreaterThan(3 * (ox1 - ox0)); // "Hello world" reads vertically
    inkBox(poppler).forEach((value, i) => {
      expect(Math.abs(value - [ox0, oy0, ox1, oy1][i])).toBeLessThanOrEqual(4);
    });
  });

  it('flattens AcroForm fields into the image (§12.2)', async () => {
    const doc = await PDFDocument.create();
    const page = doc.addPage([612, 792]);
    const field = doc.getForm().createTextField('customer');
    field.setText('WWWWWWWW');
    field.addToPage(page, {
      x: 100,
      y: 600,
      width: 300,
      height: 60,
      font: await doc.embedFont(StandardFonts.Helvetica),
    });
    field.setFontSize(36);
    const raster = decodePng(await renderPagePng(await doc.save(), 0, 612));
    let dark = 0;
    for (let y = 792 - 655; y < 792 - 605; y += 1)
      for (let x = 105; x < 395; x += 1) if (isDark(raster.pixel(x, y))) dark += 1;
    expect(dark).toBeGreaterThan(500); // the value's glyphs, not an empty box
  });

  it('refuses a page out of range', async () => {
    await expectValidation(
      renderPagePng(fixturePdf('documenso-a4-size.pdf'), 1),
      /page 1 is out of range: the document has 1 page/,
    );
  });
});

describe('pointsToFractions / fractionsToPoints', () => {
  const pages: PdfPage[] = [
    { width: 612, height: 792, rotate: 0 },
    { width: 792, height: 612, rotate: 90 },
  ];

  it(
    'converts points from the top-left of the displayed page (page 1-based) to fractions ' + '(page 0-based) and back',
    () => {
      const fractions = pointsToFractions({ x: 72, y: 144, w: 100, h: 50, page: 2 }, pages, 'fields[0].areas[0]');
      expect(fractions.page).toBe(1);
      expect(fractions.x).toBeCloseTo(72 / 792, 12);
      expect(fractions.y).toBeCloseTo(144 / 612, 12);
      expect(fractions.w).toBeCloseTo(100 / 792, 12);
      expect(fractions.h).toBeCloseTo(50 / 612, 12);
      const points = fractionsToPoints(fractions, pages, 'x');
      expect(points.page).toBe(2);
      for (const key of ['x', 'y', 'w', 'h'] as const)
        expect(points[key]).toBeCloseTo({ x: 72, y: 144, w: 100, h: 50 }[key], 9);
      // An area filling the page exactly, and one a rounding error past the edge, are fine.
      expect(pointsToFractions({ x: 0, y: 0, w: 612, h: 792, page: 1 }, pages, 'a')).toEqual({
        x: 0,
        y: 0,
        w: 1,
        h: 1,
        page: 0,
      });
      const edge = pointsToFractions({ x: 512, y: 742, w: 100.2, h: 50.3, page: 1 }, pages, 'a');
      expect(edge.x + edge.w).toBeLessThanOrEqual(1);
      expect(edge.y + edge.h).toBeLessThanOrEqual(1);
    },
  );

  it('refuses bad areas with a 422 naming the area', async () => {
    const label = 'fields[2].areas[0]';
    const cases: Array<[Record<string, number>, RegExp]> = [
      [{ page: 0 }, /page 0 is out of range; the document has 2 page\(s\), numbered from 1/],
      [{ page: 3 }, /page 3 is out of range/],
      [{ page: 1.5 }, /page 1\.5 is out of range/],
      [{ x: Number.NaN }, /x must be a finite number/],
      [{ w: Number.POSITIVE_INFINITY }, /w must be a finite number/],
      [{ x: -1 }, /x and y must not be negative/],
      [{ h: 0 }, /w and h must be greater than 0/],
      [{ w: -5 }, /w and h must be greater than 0/],
      [
        { x: 600 },
        /the area \(x 600, y 144, w 100, h 50 points\) does not fit on page 1, which is 612 × 792 points as displayed/,
      ],
      [{ y: 760 }, /the area .* does not fit on page 1/],
    ];
    for (const [change, pattern] of cases) {
      const area = { x: 72, y: 144, w: 100, h: 50, page: 1, ...change };
      await expectValidation(
        () => pointsToFractions(area, pages, label),
        new RegExp(`^${label.replace(/[[\].]/g, '\\$&')}: ${pattern.source}`),
      );
    }
    await expectValidation(
      () => pointsToFractions({ x: 1, y: 1, w: 1, h: 1, page: '1' as unknown as number }, pages, label),
      /page must be a finite number/,
    );
    await expectValidation(
      () => fractionsToPoints({ x: 0, y: 0, w: 0.1, h: 0.1, page: 2 }, pages, label),
      /page 2 \(0-based\) is out of range/,
    );
  });
});

describe('areas drawn back onto the page land where they were asked for', () => {
  /** Boxes in displayed points (x, y from the top-left, w, h). */
  const boxes = (page: PdfPage) => [
    { x: 72, y: 144, w: 100, h: 50 },
    { x: page.width - 172, y: page.height - 112, w: 120, h: 60 },
  ];

  /** Draws `boxes` red through pointsToFractions → fractionsToPdfRect, renders, checks each box. */
  async function drawAndCheck(bytes: Uint8Array, name: string): Promise<void> {
    const info = await inspectPdf(bytes, name);
    const page = info.pages[0];
    const doc = await PDFDocument.load(bytes);
    const target = doc.getPage(0);
    for (const box of boxes(page)) {
      const fractions = pointsToFractions({ ...box, page: 1 }, info.pages, name);
      target.drawRectangle({ ...fractionsToPdfRect(fractions, page), color: rgb(1, 0, 0) });
    }
    const raster = renderWithPoppler(await doc.save(), name);
    expect([raster.width, raster.height], name).toEqual([Math.round(page.width), Math.round(page.height)]);
    for (const { x, y, w, h } of boxes(page)) {
      const where = `${name} box at (${x}, ${y})`;
      // Inside: the four corners (2 pt in) and the centre are red.
      for (const [px, py] of [
        [x + 2, y + 2],
        [x + w - 2, y + 2],
        [x + 2, y + h - 2],
        [x + w - 2, y + h - 2],
        [x + w / 2, y + h / 2],
      ]) {
        expect(isRed(raster.pixel(px, py)), `${where}: inside at (${px}, ${py})`).toBe(true);
      }
      // Outside: 3 pt beyond each edge is not.
      for (const [px, py] of [
        [x - 3, y + h / 2],
        [x + w + 3, y + h / 2],
        [x + w / 2, y - 3],
        [x + w / 2, y + h + 3],
      ]) {
        expect(isRed(raster.pixel(px, py)), `${where}: outside at (${px}, ${py})`).toBe(false);
      }
    }
  }

  for (const file of [
    'pdfjs-hello_world_rotated.pdf',
    'documenso-a4-size.pdf',
    'documenso-letter-size.pdf',
    'documenso-tabloid-landscape.pdf',
  ]) {
    it(`on ${file}`, async () => {
      await drawAndCheck(fixturePdf(file), file);
    });
  }

  for (const rotate of [0, 90, 180, 270]) {
    it(`on a page with /Rotate ${rotate} and a CropBox that does not start at the origin`, async () => {
      const doc = await PDFDocument.create();
      const page = doc.addPage([100, 100]);
      page.setMediaBox(-40, 30, 700, 900);
      page.setCropBox(10, 60, 560, 780);
      page.setRotation(degrees(rotate));
      await drawAndCheck(await doc.save(), `crop-rotate-${rotate}`);
    });
  }

  it('fractionsToPdfRect without a cropBox assumes the box starts at the origin', () => {
    const page: PdfPageInfo = { width: 792, height: 612, rotate: 90, cropBox: [0, 0, 612, 792] };
    const area = { x: 0.1, y: 0.2, w: 0.3, h: 0.1 };
    expect(fractionsToPdfRect(area, { width: 792, height: 612, rotate: 90 })).toEqual(fractionsToPdfRect(area, page));
    // Rotate 90: displayed x runs along user y, displayed y along user x.
    const rect = fractionsToPdfRect(area, page);
    expect(rect.x).toBeCloseTo(0.2 * 612, 9);
    expect(rect.y).toBeCloseTo(0.1 * 792, 9);
    expect(rect.width).toBeCloseTo(0.1 * 612, 9);
    expect(rect.height).toBeCloseTo(0.3 * 792, 9);
  });
});
