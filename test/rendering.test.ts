/**
 * The local renderer: HTML templates through the machine's Chromium (field tags, areas, header
 * and footer, paper sizes, no network or file access) and DOCX through LibreOffice; errors,
 * timeouts and missing engines. Needs chromium, libreoffice-writer and poppler-utils (.ci/run
 * installs them).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { AppError } from '../src/errors.ts';
import { createLimiter, withDeadline } from '../src/rendering/limits.ts';
import {
  PAPER_SIZES,
  createRenderer,
  parsePaperSize,
  type HtmlFieldTag,
  type PaperSize,
  type Renderer,
} from '../src/rendering/renderer.ts';
import { makeDocx, makeZip } from './fixtures/rendering/make-docx.ts';
import { pdfLinkUris, pdfPageSizes, pdfPageTexts, pdfWords, type Word } from './fixtures/rendering/poppler.ts';

const logger = pino({ level: 'silent' });
const config = (env: Record<string, string> = {}) => loadConfig({ RENDER_CONCURRENCY: '2', ...env });

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected a rejection');
}

/** The field's area in points from the page's top-left (the page size comes from pdfinfo). */
function areaInPoints(field: HtmlFieldTag, size: { width: number; height: number }) {
  const { x, y, w, h } = field.area;
  return { x: x * size.width, y: y * size.height, right: (x + w) * size.width, bottom: (y + h) * size.height };
}

function word(words: Word[], text: string): Word {
  const found = words.filter((w) => w.text === text);
  expect(found, `word ${text}`).toHaveLength(1);
  return found[0]!;
}

let renderer: Renderer;

beforeAll(() => {
  renderer = createRenderer(config(), logger);
});

afterAll(async () => {
  await renderer.close();
});

describe('paper sizes', () => {
  it('parses size case-insensitively, defaults to Letter and refuses others with 422', () => {
    expect(parsePaperSize(undefined)).toBe('Letter');
    expect(parsePaperSize('')).toBe('Letter');
    expect(parsePaperSize(null)).toBe('Letter');
    expect(parsePaperSize('a4')).toBe('A4');
    expect(parsePaperSize(' LEDGER ')).toBe('Ledger');
    expect(parsePaperSize('tabloid')).toBe('Tabloid');
    for (const bad of ['B5', 'letterx', 42, {}]) {
      let error: unknown;
      try {
        parsePaperSize(bad);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).status).toBe(422);
      expect((error as AppError).message).toMatch(/size must be one of Letter, Legal, Tabloid, Ledger, A0/);
    }
  });

  it('holds the sizes in points, Ledger being Tabloid landscape', () => {
    expect(PAPER_SIZES.Letter).toEqual({ width: 612, height: 792 });
    expect(PAPER_SIZES.Ledger).toEqual({ width: 1224, height: 792 });
    expect(PAPER_SIZES.Tabloid).toEqual({ width: 792, height: 1224 });
    expect(PAPER_SIZES.A4.width).toBeCloseTo(595.28, 2);
    expect(PAPER_SIZES.A4.height).toBeCloseTo(841.89, 2);
  });

  it('prints every size at its dimensions (pdfinfo), with the field area relative to that page', async () => {
    for (const size of Object.keys(PAPER_SIZES) as PaperSize[]) {
      const { pdf, fields } = await renderer.htmlToPdf({
        html: `<p>Size ${size}</p><text-field name="F" style="width: 96px; height: 48px"></text-field>`,
        size,
      });
      const pages = await pdfPageSizes(pdf);
      expect(pages, size).toHaveLength(1);
      // Chromium rounds the paper to its device units: within 1 pt of the nominal size.
      expect(Math.abs(pages[0]!.width - PAPER_SIZES[size].width), `${size} width ${pages[0]!.width}`).toBeLessThan(1);
      expect(Math.abs(pages[0]!.height - PAPER_SIZES[size].height), `${size} height ${pages[0]!.height}`).toBeLessThan(
        1,
      );
      // 96 × 48 CSS px = 72 × 36 pt, at the 0.5 in (36 pt) margin plus the body's 8 px (6 pt).
      const box = areaInPoints(fields[0]!, pages[0]!);
      expect(Math.abs(box.right - box.x - 72)).toBeLessThan(1);
      expect(Math.abs(box.bottom - box.y - 36)).toBeLessThan(1);
      expect(Math.abs(box.x - 42)).toBeLessThan(1);
    }
  }, 60_000);
});

describe('HTML templates', () => {
  // Each field holds a word at its top-left and one at its bottom-right, so the text layer says
  // where Chromium put the box; the areas must agree within 2 pt.
  const corners = (id: string) =>
    `<span style="align-self:flex-start;line-height:1">TL${id}</span><span ` +
    `style="align-self:flex-end;line-height:1">BR${id}</span>`;
  const flex = 'display:inline-flex;flex-direction:column;justify-content:space-between;font:10px/1 sans-serif';
  const html = `<!DOCTYPE html>
<html><head><title>Agreement</title><style>body { font-family: sans-serif; } h1 { margin: 0 0 40px; }</style></head>
<body>
  <h1>Services agreement</h1>
  <p>Industry: <text-field name="Industry" role="First Party" style="width: 80px; height: 16px"></text-field>
     (as in DocuSeal's example)</p>
  <p>Code: <text-field name="Code" role="First Party" required="false"
     style="width: 120px; height: 40px; ${flex}">${corners('1')}</text-field></p>
  <p style="margin-left: 200px">Sign: <signature-field name="Signature" role="Second Party"
     style="width: 160px; height: 60px; ${flex}">${corners('2')}</signature-field></p>
  <p>See the <a href="https://example.com/terms">terms</a>.</p>
  <div style="break-before: page"></div>
  <p>Second page</p>
  <p>Date: <date-field name="Start" submitter="First Party" readonly default="2026-01-01"
     style="width: 100px; height: 30px; ${flex}">${corners('3')}</date-field></p>
  <p>Plan: <select-field name="Plan" options="Basic, Pro ,Team" style="width: 90px; height: 20px"></select-field>
     <checkbox-field name="Agree"/> I agree</p>
</body></html>`;

  let result: { pdf: Buffer; fields: HtmlFieldTag[] };
  let words: Word[];
  let sizes: Array<{ width: number; height: number }>;

  beforeAll(async () => {
    result = await renderer.htmlToPdf({
      html,
      header:
        '<div style="font-size: 10px">HEADERMARK page <span class="pageNumber"></span> of <span ' +
        'class="totalPages"></span></div>',
      footer: '<div style="font-size: 10px; text-align: right">FOOTERMARK</div>',
      size: 'Letter',
    });
    words = await pdfWords(result.pdf);
    sizes = await pdfPageSizes(result.pdf);
  });

  it('reads every field tag with its attributes, in document order', () => {
    const summary = result.fields.map(({ area, attributes, ...rest }) => rest);
    expect(summary).toEqual([
      { name: 'Industry', type: 'text', role: 'First Party', required: true, readonly: false },
      { name: 'Code', type: 'text', role: 'First Party', required: false, readonly: false },
      { name: 'Signature', type: 'signature', role: 'Second Party', required: true, readonly: false },
      { name: 'Start', type: 'date', role: 'First Party', required: true, readonly: true, defaultValue: '2026-01-01' },
      { name: 'Plan', type: 'select', required: true, readonly: false, options: ['Basic', 'Pro', 'Team'] },
      { name: 'Agree', type: 'checkbox', required: true, readonly: false },
    ]);
    expect(result.fields[0]!.attributes).toEqual({
      name: 'Industry',
      role: 'First Party',
      style: 'width: 80px; height: 16px',
    });
    expect(result.fields.map((f) => f.area.page)).toEqual([0, 0, 0, 1, 1, 1]);
  });

  it('prints two Letter pages with the header and footer on each', async () => {
    expect(sizes).toEqual([
      { width: 612, height: 792 },
      { width: 612, height: 792 },
    ]);
    const texts = await pdfPageTexts(result.pdf);
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/HEADERMARK page 1 of 2/);
    expect(texts[1]).toMatch(/HEADERMARK page 2 of 2/);
    for (const text of texts) expect(text).toMatch(/FOOTERMARK/);
    expect(texts[0]).toMatch(/Services agreement/);
    expect(texts[1]).toMatch(/Second page/);
    // Header in the top band, footer in the bottom one, body between them.
    for (const page of [0, 1]) {
      const onPage = words.filter((w) => w.page === page);
      expect(onPage.find((w) => w.text === 'HEADERMARK')!.yMax).toBeLessThan(72);
      expect(onPage.find((w) => w.text === 'FOOTERMARK')!.yMin).toBeGreaterThan(792 - 72);
    }
  });

  it('puts each area where Chromium painted the element (text inside it, within 2 pt)', () => {
    for (const [id, index] of [
      ['1', 1],
      ['2', 2],
      ['3', 3],
    ] as const) {
      const field = result.fields[index]!;
      const box = areaInPoints(field, sizes[field.area.page]!);
      const topLeft = word(words, `TL${id}`);
      const bottomRight = word(words, `BR${id}`);
      expect(topLeft.page).toBe(field.area.page);
      expect(Math.abs(topLeft.xMin - box.x), `TL${id} x`).toBeLessThan(2);
      expect(Math.abs(topLeft.yMin - box.y), `TL${id} y`).toBeLessThan(2);
      expect(Math.abs(bottomRight.xMax - box.right), `BR${id} right`).toBeLessThan(2);
      expect(Math.abs(bottomRight.yMax - box.bottom), `BR${id} bottom`).toBeLessThan(2);
    }
  });

  it('gives each area the CSS size of its element (px × 0.75 = pt)', () => {
    const expected: Array<[number, number]> = [
      [80, 16],
      [120, 40],
      [160, 60],
      [100, 30],
      [90, 20],
      [16, 16], // the checkbox's default size
    ];
    result.fields.forEach((field, i) => {
      const box = areaInPoints(field, sizes[field.area.page]!);
      expect(Math.abs(box.right - box.x - expected[i]![0] * 0.75), `${field.name} width`).toBeLessThan(1);
      expect(Math.abs(box.bottom - box.y - expected[i]![1] * 0.75), `${field.name} height`).toBeLessThan(1);
    });
  });

  it('places the bare DocuSeal-style tag on its line: after "Industry:" and level with it', () => {
    const field = result.fields[0]!;
    const box = areaInPoints(field, sizes[0]!);
    const label = word(words, 'Industry:');
    expect(box.x).toBeGreaterThan(label.xMax);
    expect(box.x - label.xMax).toBeLessThan(8);
    expect(box.bottom).toBeGreaterThan(label.yMin);
    expect(box.y).toBeLessThan(label.yMax);
  });

  it('removes the markers and keeps the document’s own links', async () => {
    const links = await pdfLinkUris(result.pdf);
    expect(links).toEqual([['https://example.com/terms'], []]);
  });

  it('ignores a user link that imitates a marker', async () => {
    const { pdf, fields } = await renderer.htmlToPdf({
      html:
        '<a href="https://fields.signet.invalid/000000000000000000000000/0" ' +
        'style="display:block;width:300px;height:100px">fake</a><text-field name="Real" ' +
        'style="width:50px;height:10px"></text-field>',
      size: 'Letter',
    });
    expect(fields[0]!.area.w * 612).toBeCloseTo(37.5, 0);
    expect(await pdfLinkUris(pdf)).toEqual([['https://fields.signet.invalid/000000000000000000000000/0']]);
  });

  it('renders a fragment without doctype in standards mode and closes self-closing tags', async () => {
    const { fields } = await renderer.htmlToPdf({
      html:
        'Name <text-field name="A" style="width:100px;height:20px"/> then <initials-field ' +
        'name="B"></initials-field>',
      size: 'A4',
    });
    expect(fields.map((f) => [f.name, f.type])).toEqual([
      ['A', 'text'],
      ['B', 'initials'],
    ]);
    // B follows A on the same line, not nested inside it.
    expect(fields[1]!.area.x).toBeGreaterThan(fields[0]!.area.x + fields[0]!.area.w);
  });

  it('accepts every <type>-field', async () => {
    const types = [
      'text',
      'signature',
      'initials',
      'date',
      'datenow',
      'image',
      'file',
      'payment',
      'stamp',
      'select',
      'checkbox',
      'multiple',
      'radio',
      'cells',
      'phone',
      'number',
    ];
    const { fields } = await renderer.htmlToPdf({
      html: types.map((t) => `<div><${t}-field name="${t}"></${t}-field></div>`).join(''),
      size: 'Legal',
    });
    expect(fields.map((f) => f.type)).toEqual(types);
    for (const f of fields) expect(f.area.w > 0 && f.area.h > 0).toBe(true);
  });

  it('refuses an unknown <foo-field> with 422 naming it', async () => {
    const error = await rejection(
      renderer.htmlToPdf({ html: '<p>x <foo-field name="X"></foo-field></p>', size: 'Letter' }),
    );
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/Unknown field tag <foo-field>/);
  });

  it('refuses bad attributes with 422 naming the element', async () => {
    const cases: Array<[string, RegExp]> = [
      [
        '<text-field name="Age" required="maybe"></text-field>',
        /<text-field name="Age">: required="maybe" is not a boolean/,
      ],
      ['<checkbox-field name="C" readonly="sure"></checkbox-field>', /<checkbox-field name="C">: readonly="sure"/],
      [
        '<text-field name="T" options="a,b"></text-field>',
        /<text-field name="T">: options are only for select, radio and multiple/,
      ],
      [
        '<text-field name="R" role="A" submitter="B"></text-field>',
        /<text-field name="R">: role="A" and submitter="B" disagree/,
      ],
    ];
    for (const [html, message] of cases) {
      const error = await rejection(renderer.htmlToPdf({ html, size: 'Letter' }));
      expect(error.status).toBe(422);
      expect(error.message).toMatch(message);
    }
  });

  it('refuses a field with no painted box, and field tags in the header', async () => {
    const hidden = await rejection(
      renderer.htmlToPdf({
        html: '<div style="display:none"><text-field name="Hidden"></text-field></div>',
        size: 'Letter',
      }),
    );
    expect(hidden.status).toBe(422);
    expect(hidden.message).toMatch(/<text-field name="Hidden"> has no box/);
    const header = await rejection(
      renderer.htmlToPdf({ html: '<p>x</p>', header: '<signature-field name="S"></signature-field>', size: 'Letter' }),
    );
    expect(header.status).toBe(422);
    expect(header.message).toMatch(/html_header cannot hold field tags \(<signature-field name="S">\)/);
  });

  it('finds field tags the way HTML does: not in comments, scripts or attribute values', async () => {
    const { fields } = await renderer.htmlToPdf({
      html: `<!-- <foo-field> --><script><bar-field></script><textarea><baz-field></textarea>
        <p title="<qux-field>">x</p><TEXT-FIELD NAME="Upper" data-x='a>b' style="width:10px;height:10px"></TEXT-FIELD>`,
      size: 'Letter',
    });
    expect(fields.map((f) => f.name)).toEqual(['Upper']);
    expect(fields[0]!.attributes['data-x']).toBe('a>b');
  });
});

describe('HTML templates have no network and no file access', () => {
  let server: http.Server;
  let port: number;
  const requests: string[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': req.url?.endsWith('.css') ? 'text/css' : 'image/png' });
      res.end(req.url?.endsWith('.css') ? 'body { background: red }' : '');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('never requests images, styles, frames or fonts and never reads files', async () => {
    const base = `http://127.0.0.1:${port}`;
    const html = `<!doctype html><html><head>
      <meta http-equiv="refresh" content="0; url=${base}/refresh">
      <link rel="stylesheet" href="${base}/style.css">
      <style>@import url("${base}/import.css");
        @font-face { font-family: X; src: url("${base}/font.woff"); } p { font-family: X; }</style>
      <script src="${base}/script.js"></script>
      </head><body>
      <p>Body text</p>
      <img src="${base}/x.png">
      <div style="width:10px;height:10px;background-image:url(${base}/bg.png)"></div>
      <iframe src="file:///etc/passwd" width="600" height="300"></iframe>
      <iframe src="${base}/frame.html"></iframe>
      <object data="file:///etc/passwd" type="text/plain" width="600" height="300"></object>
      <embed src="file:///etc/hostname" type="text/plain">
      <video src="${base}/v.mp4" poster="${base}/poster.png"></video>
      <svg><image href="${base}/svg.png" width="10" height="10"/></svg>
      <text-field name="F" style="width:50px;height:10px;background:url(${base}/field.png)"></text-field>
      </body></html>`;
    const { pdf } = await renderer.htmlToPdf({
      html,
      header: `<img src="${base}/header.png"> head`,
      footer: `<div style="background:url(${base}/footer.png)">foot</div>`,
      size: 'Letter',
    });
    await new Promise((resolve) => setTimeout(resolve, 300)); // late requests would show up here
    expect(requests).toEqual([]);
    const text = (await pdfPageTexts(pdf)).join('\n');
    expect(text).toMatch(/Body text/);
    expect(text).not.toMatch(/root:|\/bin\/(ba)?sh|nologin/);
    const hostname = (await fs.readFile('/etc/hostname', 'utf8').catch(() => '')).trim();
    if (hostname.length > 3) expect(text).not.toContain(hostname);
  });
});

describe('DOCX', () => {
  it('converts a DOCX with text tags, the tags staying in the text layer', async () => {
    const docx = makeDocx([
      { paragraph: 'Services agreement' },
      { paragraph: 'Sign here: {{Sign;type=signature}}' },
      {
        table: [
          ['Customer', '{{Customer;role=Customer}}'],
          ['Date', '{{Date;type=date;required=false}}'],
        ],
      },
    ]);
    const started = performance.now();
    const pdf = await renderer.docxToPdf({ docx, filename: 'agreement.docx' });
    const ms = performance.now() - started;
    console.log(`one-page DOCX → PDF through the local renderer: ${Math.round(ms)} ms (target ≤ 5000 ms)`);
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    expect(await pdfPageSizes(pdf)).toEqual([{ width: 612, height: 792 }]);
    const text = (await pdfPageTexts(pdf)).join('');
    expect(text).toContain('{{Sign;type=signature}}');
    expect(text).toContain('{{Customer;role=Customer}}');
    expect(text).toContain('{{Date;type=date;required=false}}');
  }, 60_000);

  it('times a warm one-page conversion', async () => {
    const docx = makeDocx([{ paragraph: 'Hello {{Name}}' }]);
    const started = performance.now();
    await renderer.docxToPdf({ docx, filename: 'hello.docx' });
    console.log(`warm one-page DOCX → PDF: ${Math.round(performance.now() - started)} ms`);
  }, 60_000);

  it('refuses bytes that are not a Word document with 422', async () => {
    for (const docx of [Buffer.alloc(0), Buffer.from('%PDF-1.7 not a docx'), Buffer.from('hello')]) {
      const error = await rejection(renderer.docxToPdf({ docx, filename: 'x.docx' }));
      expect(error.status).toBe(422);
    }
  });

  it('refuses a ZIP that is no archive with 422, before LibreOffice', async () => {
    const error = await rejection(
      renderer.docxToPdf({ docx: Buffer.from('PK\u0003\u0004garbage-garbage'), filename: 'broken.docx' }),
    );
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/^broken\.docx is not a valid DOCX archive: /);
  });

  it('refuses a ZIP that LibreOffice cannot read with 422', async () => {
    const docx = makeZip([
      ['word/document.xml', 'this is not XML <<<'],
      ['notes.txt', 'hello'],
    ]);
    const error = await rejection(renderer.docxToPdf({ docx, filename: 'broken.docx' }));
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/broken\.docx could not be converted/);
  }, 60_000);
});

describe('timeouts, limits and missing engines', () => {
  it('gives up on HTML after RENDER_TIMEOUT_SECONDS with 503', async () => {
    const slow = createRenderer(config({ RENDER_TIMEOUT_SECONDS: '0.001' }), logger);
    try {
      const error = await rejection(slow.htmlToPdf({ html: '<p>x</p>', size: 'Letter' }));
      expect(error.status).toBe(503);
      expect(error.message).toMatch(/Rendering the HTML took longer than 0.001 s/);
    } finally {
      await slow.close();
    }
  });

  it('kills LibreOffice at the deadline and leaves no process or file behind', async () => {
    const tmp = os.tmpdir();
    const before = (await fs.readdir(tmp)).filter((n) => n.startsWith('signet-docx-'));
    const slow = createRenderer(config({ RENDER_TIMEOUT_SECONDS: '0.3' }), logger);
    try {
      const error = await rejection(slow.docxToPdf({ docx: makeDocx([{ paragraph: 'x' }]), filename: 'x.docx' }));
      expect(error.status).toBe(503);
      expect(error.message).toMatch(/Converting the DOCX took longer than 0.3 s/);
    } finally {
      await slow.close();
    }
    const after = (await fs.readdir(tmp)).filter((n) => n.startsWith('signet-docx-'));
    expect(after.filter((n) => !before.includes(n))).toEqual([]);
    const { stdout } = await promisify(execFile)('ps', ['-eo', 'args']);
    const ours = stdout
      .split('\n')
      .filter((line) => line.includes('signet-soffice-profile-') && line.includes(path.join(tmp, 'signet-docx-')));
    expect(ours).toEqual([]);
  }, 30_000);

  it('names Chromium when it is missing, and still converts DOCX', async () => {
    const partial = createRenderer(config({ CHROMIUM_PATH: '/nonexistent' }), logger);
    try {
      const error = await rejection(partial.htmlToPdf({ html: '<p>x</p>', size: 'Letter' }));
      expect(error.status).toBe(503);
      expect(error.message).toMatch(/HTML templates need Chromium: install the chromium package or set GOTENBERG_URL/);
      expect(error.message).toMatch(/CHROMIUM_PATH=\/nonexistent/);
      const pdf = await partial.docxToPdf({ docx: makeDocx([{ paragraph: 'still works' }]), filename: 'a.docx' });
      expect((await pdfPageTexts(pdf)).join('')).toMatch(/still works/);
    } finally {
      await partial.close();
    }
  }, 60_000);

  it('names LibreOffice when it is missing, and still renders HTML', async () => {
    const partial = createRenderer(config({ SOFFICE_PATH: '/nonexistent' }), logger);
    try {
      const error = await rejection(partial.docxToPdf({ docx: makeDocx([{ paragraph: 'x' }]), filename: 'a.docx' }));
      expect(error.status).toBe(503);
      expect(error.message).toMatch(/DOCX templates need LibreOffice/);
      expect(error.message).toMatch(/SOFFICE_PATH=\/nonexistent/);
      const { fields } = await partial.htmlToPdf({ html: '<text-field name="A"></text-field>', size: 'Letter' });
      expect(fields).toHaveLength(1);
    } finally {
      await partial.close();
    }
  }, 30_000);

  it('runs at most RENDER_CONCURRENCY conversions at once', async () => {
    const limiter = createLimiter(2);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      [0, 1, 2, 3, 4].map((i) =>
        limiter.run(async () => {
          running += 1;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setTimeout(resolve, 20));
          running -= 1;
          order.push(i);
        }),
      ),
    );
    expect(peak).toBe(2);
    expect(order.sort()).toEqual([0, 1, 2, 3, 4]);
    expect(limiter.active).toBe(0);
    // A failing task frees its slot too.
    await expect(limiter.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(limiter.active).toBe(0);
  });

  it('runs the clean-up when a deadline passes', async () => {
    let cleaned = false;
    const error = await rejection(
      withDeadline((signal) => new Promise((resolve) => signal.addEventListener('abort', resolve)), {
        timeoutMs: 10,
        message: 'too slow',
        onTimeout: () => {
          cleaned = true;
        },
      }),
    );
    expect(error.status).toBe(503);
    expect(error.message).toBe('too slow');
    expect(cleaned).toBe(true);
  });
});
