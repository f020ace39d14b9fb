/**
 * src/documents/text-tags.ts on PDFs drawn with pdf-lib (tags over three pages, three roles, in
 * table cells, split into runs, wrapped, on a rotated page) and on the shared fixtures, checked
 * with the real tools: `pdftotext` for the text layer, `pdftoppm` for what a reader sees.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as mupdf from 'mupdf';
import { degrees, PDFDocument, rgb, StandardFonts, type PDFFont, type PDFPage } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../src/errors.ts';
import { extractTextTags, parseTextTag, type TextTagArea, type TextTagsResult } from '../src/documents/text-tags.ts';

const FIXTURES = path.join(import.meta.dirname, '..', '..', 'shared', 'fixtures', 'pdf');
const fixturePdf = (name: string): Buffer => fs.readFileSync(path.join(FIXTURES, name));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-text-tags-test-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** pdf-lib's Helvetica metrics, for where drawn text ends. */
let helvetica: PDFFont;
beforeAll(async () => {
  helvetica = await (await PDFDocument.create()).embedFont(StandardFonts.Helvetica);
});
const widthOf = (text: string, size: number): number => helvetica.widthOfTextAtSize(text, size);

function writeTmp(name: string, bytes: Uint8Array): string {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, bytes);
  return file;
}

const pdftotext = (bytes: Uint8Array, name: string): string =>
  execFileSync('pdftotext', ['-layout', writeTmp(`${name}.pdf`, bytes), '-']).toString();

/** Renders page `page` (0-based) as displayed at 72 dpi: 1 pixel = 1 point. */
function render(bytes: Uint8Array, page: number, name: string) {
  const file = writeTmp(`${name}-render.pdf`, bytes);
  const ppm = execFileSync('pdftoppm', ['-r', '72', '-cropbox', '-f', String(page + 1), '-l', String(page + 1), file], {
    maxBuffer: 64 << 20,
  });
  const header = /^P6\s+(\d+)\s+(\d+)\s+255\s/.exec(ppm.subarray(0, 50).toString('latin1'));
  if (!header) throw new Error('pdftoppm did not produce a PPM');
  const [width, offset] = [Number(header[1]), header[0].length];
  return {
    width,
    height: Number(header[2]),
    pixel(x: number, y: number): [number, number, number] {
      const i = offset + (Math.round(y) * width + Math.round(x)) * 3;
      return [ppm[i], ppm[i + 1], ppm[i + 2]];
    },
  };
}
type Raster = ReturnType<typeof render>;

/** Pixels in a box (displayed points) that differ from `background` by more than a little. */
function inkIn(
  raster: Raster,
  box: { x0: number; y0: number; x1: number; y1: number },
  background = [255, 255, 255],
): number {
  let count = 0;
  for (let y = Math.ceil(box.y0); y <= Math.floor(box.y1); y += 1) {
    for (let x = Math.ceil(box.x0); x <= Math.floor(box.x1); x += 1) {
      const pixel = raster.pixel(x, y);
      if (pixel.some((value, i) => Math.abs(value - background[i]) > 40)) count += 1;
    }
  }
  return count;
}

async function expectValidation(run: () => Promise<unknown> | unknown, pattern: RegExp): Promise<AppError> {
  let error: unknown;
  try {
    await run();
  } catch (caught) {
    error = caught;
  }
  expect(error, `expected a 422 matching ${pattern}`).toBeInstanceOf(AppError);
  expect((error as AppError).status).toBe(422);
  expect((error as AppError).message).toMatch(pattern);
  return error as AppError;
}

/** Where a tag (or a piece of one) was drawn, in displayed points, y from the top. */
interface Drawn {
  page: number;
  text: string;
  x: number;
  /** Baseline, from the top of the displayed page. */
  baseline: number;
  size: number;
  width: number;
}

/** The displayed box a drawn text's glyphs occupy (Helvetica: cap height 0.718, descent 0.207 em). */
const inkBox = (d: Drawn) => ({
  x0: d.x,
  x1: d.x + d.width,
  y0: d.baseline - 0.718 * d.size,
  y1: d.baseline + 0.207 * d.size,
});

const GREY = [0.85, 0.85, 0.85] as const;

/**
 * Three pages: Letter with a sentence and a table (label | tag cells, one shaded, one tag wrapped
 * over two lines), A4 with a repeated name, options, datenow, a width/height tag and a tag drawn
 * as two runs, and a Letter page with /Rotate 90 whose tag reads left to right as displayed.
 */
async function buildTaggedPdf() {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const drawn: Drawn[] = [];
  const cells: Array<{ tag: string; x0: number; y0: number; x1: number; y1: number }> = [];

  /** Draws text on an unrotated page at displayed (x, baseline). */
  const text = (
    page: PDFPage,
    pageIndex: number,
    value: string,
    x: number,
    baseline: number,
    size: number,
    f: PDFFont = font,
  ) => {
    page.drawText(value, { x, y: page.getHeight() - baseline, size, font: f });
    const d = { page: pageIndex, text: value, x, baseline, size, width: f.widthOfTextAtSize(value, size) };
    drawn.push(d);
    return d;
  };

  // Page 1 (Letter): a tag inside a sentence, then a table.
  const p1 = doc.addPage([612, 792]);
  const before = text(p1, 0, 'Buyer name: ', 72, 100, 12);
  text(p1, 0, '{{Buyer Name;role=Buyer}}', 72 + before.width, 100, 12);
  text(
    p1,
    0,
    ' (as on the ID card)',
    72 + before.width + font.widthOfTextAtSize('{{Buyer Name;role=Buyer}}', 12),
    100,
    12,
  );
  const rows = [
    { label: 'Buyer signature', tag: '{{Sign;type=signature;role=Buyer}}', shaded: false },
    { label: 'Seller signature', tag: '{{Sign;type=signature;role=Seller}}', shaded: true },
    { label: 'Total', tag: '{{Total;type=number;role=Buyer;font_size=14;align=right}}', shaded: false },
  ];
  rows.forEach((row, i) => {
    const top = 200 + i * 36;
    for (const [x0, x1] of [
      [72, 222],
      [222, 540],
    ]) {
      p1.drawRectangle({
        x: x0,
        y: 792 - top - 36,
        width: x1 - x0,
        height: 36,
        borderColor: rgb(0, 0, 0),
        borderWidth: 1,
        ...(row.shaded && x0 === 222 ? { color: rgb(...GREY) } : {}),
      });
    }
    text(p1, 0, row.label, 78, top + 22, 10);
    text(p1, 0, row.tag, 228, top + 22, 10);
    cells.push({ tag: row.tag, x0: 222, y0: top, x1: 540, y1: top + 36 });
  });
  // A narrow cell whose tag wraps onto a second line.
  p1.drawRectangle({ x: 72, y: 792 - 400, width: 110, height: 40, borderColor: rgb(0, 0, 0), borderWidth: 1 });
  text(p1, 0, '{{Notes;role=Buyer;', 76, 374, 10);
  text(p1, 0, 'required=false}}', 76, 386, 10);
  cells.push({ tag: '{{Notes;role=Buyer;required=false}}', x0: 72, y0: 360, x1: 182, y1: 400 });

  // Page 2 (A4).
  const p2 = doc.addPage([595.28, 841.89]);
  text(p2, 1, 'Signed on {{Date;type=datenow;role=Seller}} by both parties.', 72, 100, 11);
  text(p2, 1, '{{Plan;type=select;options=Basic, Pro;role=Buyer;required=false}}', 72, 140, 11);
  text(p2, 1, '{{Sign;type=signature;role=Buyer}}', 300, 500, 12);
  text(p2, 1, '{{Photo;type=image;role=Seller;width=200;height=80}}', 72, 600, 9);
  // A DOCX-like tag: two runs on one line.
  const run1 = text(p2, 1, '{{Na', 72, 700, 12);
  text(p2, 1, 'me}}', 72 + run1.width, 700, 12);
  text(p2, 1, '{{type=checkbox}}', 300, 700, 12);

  // Page 3: Letter with /Rotate 90 (displayed 792 × 612). User (ux, uy) shows at (uy, ux), so
  // text along user +y, turned 90°, reads left to right as displayed.
  const p3 = doc.addPage([612, 792]);
  p3.setRotation(degrees(90));
  const rotatedTag = '{{Initials;type=initials;role=Seller}}';
  p3.drawText(rotatedTag, { x: 200, y: 100, size: 12, font, rotate: degrees(90) });
  drawn.push({
    page: 2,
    text: rotatedTag,
    x: 100,
    baseline: 200,
    size: 12,
    width: font.widthOfTextAtSize(rotatedTag, 12),
  });
  p3.drawText('Initial here:', { x: 200, y: 30, size: 12, font, rotate: degrees(90) });

  return { bytes: await doc.save(), drawn, cells };
}

describe('parseTextTag', () => {
  it('reads the name, defaults and every attribute (§12.3)', () => {
    expect(parseTextTag('{{Full Name}}', 'doc')).toEqual({
      name: 'Full Name',
      type: 'text',
      role: 'First Party',
      required: true,
      readonly: false,
      preferences: {},
    });
    expect(
      parseTextTag(
        '{{ Name ; role=Signer1;type=date;required=false;readonly=true;default=Bob;width=200;height=30;' +
          'condition=Agree:Yes;font=courier;font_size=9.5;color=blue;align=Center;format=DD/MM/YYYY}}',
        'doc',
      ),
    ).toEqual({
      name: 'Name',
      type: 'date',
      role: 'Signer1',
      required: false,
      readonly: true,
      defaultValue: 'Bob',
      width: 200,
      height: 30,
      condition: { field: 'Agree', value: 'Yes' },
      preferences: { font: 'Courier', font_size: 9.5, color: 'blue', align: 'center', format: 'DD/MM/YYYY' },
    });
    expect(parseTextTag('Choice;type=radio;options=Opt1, Opt2 ,', 'doc')).toMatchObject({
      name: 'Choice',
      type: 'radio',
      options: ['Opt1', 'Opt2'],
    });
    expect(parseTextTag('{{type=checkbox}}', 'doc')).toMatchObject({ name: '', type: 'checkbox' });
    expect(parseTextTag('{{Date;type=datenow}}', 'doc')).toMatchObject({
      type: 'date',
      readonly: true,
      defaultValue: '{{date}}',
    });
    expect(parseTextTag('{{Seal;type=stamp}}', 'doc')).toMatchObject({ type: 'stamp', readonly: true });
    expect(parseTextTag('{{Agree;type=checkbox;condition=Terms}}', 'doc').condition).toEqual({ field: 'Terms' });
    expect(parseTextTag('{{Amount;type=number;required=TRUE;mask=-4}}', 'doc')).toMatchObject({
      type: 'number',
      required: true,
      preferences: { mask: -4 },
    });
  });

  it('refuses bad tags with a 422 naming the document and the tag', async () => {
    const cases: Array<[string, RegExp]> = [
      ['{{Sign;type=autograph}}', /unknown type "autograph"; allowed types: text, signature/],
      ['{{Name;colour=red}}', /unknown attribute "colour"/],
      ['{{Name;required=maybe}}', /required must be true or false, not "maybe"/],
      ['{{Name;readonly=1}}', /readonly must be true or false, not "1"/],
      ['{{Name;width=wide}}', /width must be a positive number of points, not "wide"/],
      ['{{Name;height=-3}}', /height must be a positive number of points/],
      ['{{Name;font_size=0}}', /font_size must be a positive number/],
      ['{{Name;options=A,B}}', /options are only for select, radio, multiple fields, not text/],
      ['{{Pick;type=select;options=,}}', /options lists no option/],
      ['{{}}', /the tag is empty/],
      ['{{ ; }}', /the tag is empty/],
      ['{{Name;role=}}', /attribute "role" has no value/],
      ['{{Name;role=A;role=B}}', /attribute "role" is given twice/],
      ['{{Name;Other}}', /"Other" has no value \(write key=value\); the field name is already "Name"/],
      ['{{Name;font=Comic Sans}}', /font must be one of Times, Helvetica, Courier/],
      ['{{Name;align=justify}}', /align must be one of left, center, right/],
      ['{{Name;condition=:x}}', /condition must name a field/],
    ];
    for (const [raw, pattern] of cases) {
      const error = await expectValidation(() => parseTextTag(raw, 'contract.pdf, page 2'), pattern);
      expect(
        error.message.startsWith(
          `contract.pdf, page 2: text tag ${JSON.stringify(raw.startsWith('{{') ? raw.trim() : `{{${raw}}}`)}: `,
        ),
      ).toBe(true);
    }
  });
});

describe('extractTextTags', () => {
  let source: Awaited<ReturnType<typeof buildTaggedPdf>>;
  let result: TextTagsResult;
  const pageSizes = [
    [612, 792],
    [595.28, 841.89],
    [792, 612],
  ];
  const toPoints = (area: TextTagArea) => {
    const [w, h] = pageSizes[area.page];
    return { x0: area.x * w, y0: area.y * h, x1: (area.x + area.w) * w, y1: (area.y + area.h) * h };
  };
  const drawnTag = (text: string) => source.drawn.find((d) => d.text === text)!;

  beforeAll(async () => {
    source = await buildTaggedPdf();
    result = await extractTextTags(source.bytes, { label: 'documents[0]' });
  });

  it('turns tags into fields, with roles in order of first appearance', () => {
    expect(result.tagCount).toBe(12);
    expect(result.roles).toEqual(['Buyer', 'Seller', 'First Party']);
    const summary = result.fields.map((f) => [
      f.role,
      f.name,
      f.type,
      f.required,
      f.readonly,
      f.areas.map((a) => a.page),
    ]);
    expect(summary).toEqual([
      ['Buyer', 'Buyer Name', 'text', true, false, [0]],
      ['Buyer', 'Sign', 'signature', true, false, [0, 1]], // same name and role twice: one field, two areas
      ['Seller', 'Sign', 'signature', true, false, [0]],
      ['Buyer', 'Total', 'number', true, false, [0]],
      ['Buyer', 'Notes', 'text', false, false, [0]],
      ['Seller', 'Date', 'date', true, true, [1]],
      ['Buyer', 'Plan', 'select', false, false, [1]],
      ['Seller', 'Photo', 'image', true, false, [1]],
      ['First Party', 'Name', 'text', true, false, [1]],
      ['First Party', '', 'checkbox', true, false, [1]],
      ['Seller', 'Initials', 'initials', true, false, [2]],
    ]);
    const byName = (name: string) => result.fields.find((f) => f.name === name)!;
    expect(byName('Date').defaultValue).toBe('{{date}}');
    expect(byName('Plan').options).toEqual(['Basic', 'Pro']);
    expect(byName('Total').preferences).toEqual({ font_size: 14, align: 'right' });
  });

  it('places each area within 2 pt of where its tag was drawn', () => {
    // The datenow tag sits inside a sentence: it starts after "Signed on ".
    const sentence = drawnTag('Signed on {{Date;type=datenow;role=Seller}} by both parties.');
    const single = (name: string, role?: string) =>
      result.fields.find((f) => f.name === name && (!role || f.role === role))!.areas;
    const checks: Array<[TextTagArea, Drawn]> = [
      [single('Buyer Name')[0], drawnTag('{{Buyer Name;role=Buyer}}')],
      [single('Sign', 'Buyer')[0], drawnTag('{{Sign;type=signature;role=Buyer}}')],
      [single('Sign', 'Buyer')[1], source.drawn.filter((d) => d.text === '{{Sign;type=signature;role=Buyer}}')[1]],
      [single('Sign', 'Seller')[0], drawnTag('{{Sign;type=signature;role=Seller}}')],
      [
        single('Date')[0],
        { ...sentence, x: 72 + widthOf('Signed on ', 11), width: widthOf('{{Date;type=datenow;role=Seller}}', 11) },
      ],
      [single('Name')[0], { ...drawnTag('{{Na'), width: drawnTag('{{Na').width + drawnTag('me}}').width }],
      [single('Initials')[0], drawnTag('{{Initials;type=initials;role=Seller}}')],
    ];

    for (const [area, d] of checks) {
      const box = toPoints(area);
      const ink = inkBox(d);
      const where = `${d.text} on page ${d.page + 1}`;
      expect(area.page, where).toBe(d.page);
      expect(Math.abs(box.x0 - ink.x0), `${where}: left edge`).toBeLessThanOrEqual(2);
      expect(Math.abs(box.x1 - ink.x1), `${where}: right edge`).toBeLessThanOrEqual(2);
      // Vertically the area is the font's line box: it holds the glyphs and little more.
      expect(box.y0, `${where}: top`).toBeLessThanOrEqual(ink.y0);
      expect(box.y1, `${where}: bottom`).toBeGreaterThanOrEqual(ink.y1);
      expect(ink.y0 - box.y0, `${where}: top`).toBeLessThanOrEqual(0.5 * d.size);
      expect(box.y1 - ink.y1, `${where}: bottom`).toBeLessThanOrEqual(0.5 * d.size);
    }
  });

  it('keeps areas of tags in table cells inside their cells, a wrapped tag covering both lines', () => {
    for (const cell of source.cells) {
      const name = parseTextTag(cell.tag, 'x').name;
      const role = parseTextTag(cell.tag, 'x').role;
      const area = result.fields.find((f) => f.name === name && f.role === role)!.areas.find((a) => a.page === 0)!;
      const box = toPoints(area);
      expect(box.x0, cell.tag).toBeGreaterThan(cell.x0);
      expect(box.x1, cell.tag).toBeLessThan(cell.x1);
      expect(box.y0, cell.tag).toBeGreaterThan(cell.y0);
      expect(box.y1, cell.tag).toBeLessThan(cell.y1);
    }
    const notes = toPoints(result.fields.find((f) => f.name === 'Notes')!.areas[0]);
    expect(notes.y0).toBeLessThanOrEqual(374 - 0.718 * 10);
    expect(notes.y1).toBeGreaterThanOrEqual(386 + 0.207 * 10);
    expect(notes.x1 - notes.x0).toBeCloseTo(
      Math.max(widthOf('{{Notes;role=Buyer;', 10), widthOf('required=false}}', 10)),
      0,
    );
  });

  it('gives width/height tags an area of that size in points from the tag box top-left', () => {
    const photo = toPoints(result.fields.find((f) => f.name === 'Photo')!.areas[0]);
    const d = drawnTag('{{Photo;type=image;role=Seller;width=200;height=80}}');
    expect(Math.abs(photo.x0 - d.x)).toBeLessThanOrEqual(2);
    expect(photo.y0).toBeLessThanOrEqual(d.baseline - 0.718 * d.size);
    expect(photo.x1 - photo.x0).toBeCloseTo(200, 3);
    expect(photo.y1 - photo.y0).toBeCloseTo(80, 3);
  });

  it('removes the tags from the text layer and keeps the text around them', () => {
    const text = pdftotext(result.pdf, 'tagged-out');
    expect(pdftotext(source.bytes, 'tagged-in')).toContain('{{');
    expect(text).not.toContain('{{');
    expect(text).not.toContain('}}');
    expect(text).not.toMatch(/role=|type=/);
    for (const kept of [
      'Buyer name:',
      '(as on the ID card)',
      'Buyer signature',
      'Seller signature',
      'Total',
      'Signed on',
      'by both parties.',
      'Initial here:',
    ]) {
      expect(text, kept).toContain(kept);
    }
    // mupdf's own text extraction agrees, page by page.
    const doc = new mupdf.PDFDocument(result.pdf);
    for (let i = 0; i < doc.countPages(); i += 1)
      expect(doc.loadPage(i).toStructuredText('').asText()).not.toContain('{{');
    expect(doc.countPages()).toBe(3);
  });

  it('leaves the page blank where a tag was, and keeps borders, shading and neighbouring words', () => {
    const out = [0, 1, 2].map((page) => render(result.pdf, page, `tagged-out-${page}`));
    const input = [0, 1, 2].map((page) => render(source.bytes, page, `tagged-in-${page}`));
    expect([out[2].width, out[2].height]).toEqual([792, 612]);
    const tags = source.drawn.filter((d) => d.text.startsWith('{{') || d.text.endsWith('}}'));
    const shaded = '{{Sign;type=signature;role=Seller}}';
    for (const d of tags) {
      const ink = inkBox(d);
      const background = d.text === shaded ? GREY.map((v) => Math.round(v * 255)) : [255, 255, 255];
      const inside = { x0: ink.x0 + 1, y0: ink.y0 + 1, x1: ink.x1 - 1, y1: ink.y1 - 1 };
      expect(inkIn(input[d.page], inside, background), `${d.text} visible before`).toBeGreaterThan(20);
      expect(inkIn(out[d.page], inside, background), `${d.text} gone after`).toBe(0);
    }
    // The sentence's tag is gone but its words are still drawn; the datenow tag sits mid-sentence.
    const sentence = drawnTag('Signed on {{Date;type=datenow;role=Seller}} by both parties.');
    const signedOn = {
      x0: 73,
      y0: sentence.baseline - 7,
      x1: 72 + widthOf('Signed on', 11) - 1,
      y1: sentence.baseline,
    };
    expect(inkIn(out[1], signedOn)).toBeGreaterThan(20);
    const tagWidth = widthOf('{{Date;type=datenow;role=Seller}}', 11);
    const tagStart = 72 + widthOf('Signed on ', 11);
    expect(
      inkIn(out[1], {
        x0: tagStart + 1,
        y0: sentence.baseline - 7,
        x1: tagStart + tagWidth - 1,
        y1: sentence.baseline,
      }),
    ).toBe(0);
    expect(
      inkIn(out[1], {
        x0: tagStart + tagWidth + 3,
        y0: sentence.baseline - 7,
        x1: tagStart + tagWidth + 40,
        y1: sentence.baseline,
      }),
    ).toBeGreaterThan(20);
    const before = drawnTag('Buyer name: ');
    expect(inkIn(out[0], { ...inkBox(before), x1: before.x + before.width - 4 })).toBeGreaterThan(20);
    // Table borders and the shaded cell survive.
    expect(out[0].pixel(222, 230).every((v) => v < 100)).toBe(true); // vertical border between the cells
    expect(out[0].pixel(400, 236).every((v) => v < 100)).toBe(true); // horizontal border
    expect(out[0].pixel(500, 262)).toEqual(GREY.map((v) => Math.round(v * 255)));
  });

  it('returns a PDF without tags unchanged, and finds nothing in the fixtures', async () => {
    for (const file of [
      'documenso-letter-size.pdf',
      'docuseal-sample-document.pdf',
      'pdfjs-form_two_pages.pdf',
      'pdfjs-hello_world_rotated.pdf',
    ]) {
      const bytes = fixturePdf(file);
      const found = await extractTextTags(bytes, { label: file });
      expect(found, file).toEqual({ pdf: bytes, roles: [], fields: [], tagCount: 0 });
      expect(found.pdf, file).toBe(bytes);
    }
    // A lone "{{" in ordinary text is not a tag.
    const doc = await PDFDocument.create();
    doc.addPage().drawText('Templates use {{ to open a tag', { x: 72, y: 700, size: 12 });
    const bytes = await doc.save();
    expect((await extractTextTags(bytes, { label: 'prose.pdf' })).tagCount).toBe(0);
  });

  it('refuses a bad tag with a 422 naming the document, the page and the tag', async () => {
    const doc = await PDFDocument.create();
    doc.addPage().drawText('{{Name}}', { x: 72, y: 700, size: 12 });
    doc.addPage().drawText('Sign: {{Sign;type=autograph;role=Buyer}}', { x: 72, y: 700, size: 12 });
    await expectValidation(
      async () => extractTextTags(await doc.save(), { label: 'documents[1]' }),
      /^documents\[1\], page 2: text tag "\{\{Sign;type=autograph;role=Buyer\}\}": unknown type "autograph"/,
    );

    const clash = await PDFDocument.create();
    clash.addPage().drawText('{{Start;type=date}}  {{Start;type=text}}', { x: 72, y: 700, size: 12 });
    await expectValidation(
      async () => extractTextTags(await clash.save(), { label: 'a.pdf' }),
      /^a\.pdf, page 1: text tag field "Start" of role "First Party" is date in an earlier tag and text here/,
    );
    await expectValidation(
      () => extractTextTags(Buffer.from('hello'), { label: 'hello.txt' }),
      /^hello\.txt is not a PDF/,
    );
  });

  // Speed is measured by `npm run bench:templates`; this only proves the scan finds nothing there.
  it('scans the 14-page tracemonkey paper (no tags) and prints the time', async () => {
    const bytes = fixturePdf('pdfjs-tracemonkey.pdf');
    await extractTextTags(bytes, { label: 'warm-up' }); // mupdf's WASM start-up is not the scan
    const times: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const started = performance.now();
      const found = await extractTextTags(bytes, { label: 'pdfjs-tracemonkey.pdf' });
      times.push(performance.now() - started);
      expect(found.tagCount).toBe(0);
    }
    console.log(
      `extractTextTags on pdfjs-tracemonkey.pdf (14 pages, no tags): ` +
        `${times.map((t) => `${t.toFixed(0)} ms`).join(', ')}`,
    );
  });
});
