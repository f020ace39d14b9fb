/**
 * The Gotenberg 8 renderer against a local HTTP server that reads the multipart request the way
 * Gotenberg 8 does (routes, the `files` field with index.html / header.html / footer.html or the
 * office file, form fields in inches and booleans) and answers with a real PDF: one made with
 * pdf-lib carrying marker links at known places, or one printed by the machine's Chromium with
 * JavaScript and network on, as Gotenberg's Chromium runs by default.
 */
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type PDFArray, PDFDocument, PDFName, PDFString } from 'pdf-lib';
import pino from 'pino';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { AppError } from '../src/errors.ts';
import { CHROMIUM_ARGS, findExecutable } from '../src/rendering/local-renderer.ts';
import { createRenderer, type Renderer } from '../src/rendering/renderer.ts';
import { findFreePort } from '../src/util/free-port.ts';
import { makeDocx } from './fixtures/rendering/make-docx.ts';
import { pdfLinkUris, pdfPageSizes, pdfPageTexts, pdfWords } from './fixtures/rendering/poppler.ts';

const logger = pino({ level: 'silent' });

interface Received {
  method: string;
  url: string;
  contentType: string;
  raw: string;
  fields: Record<string, string>;
  files: Array<{ field: string; filename: string; content: Buffer }>;
}

type Handler = (request: Received, res: http.ServerResponse) => void | Promise<void>;

let server: http.Server;
let gotenbergUrl: string;
let handler: Handler;
const received: Received[] = [];

/** Parses multipart/form-data with the platform's own parser (undici's Request.formData). */
async function readRequest(req: http.IncomingMessage): Promise<Received> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const contentType = req.headers['content-type'] ?? '';
  const form = await new Request('http://gotenberg.test/', {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
  }).formData();
  const fields: Record<string, string> = {};
  const files: Received['files'] = [];
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') {
      expect(fields, `form field ${name} sent twice`).not.toHaveProperty(name);
      fields[name] = value;
    } else {
      files.push({ field: name, filename: value.name, content: Buffer.from(await value.arrayBuffer()) });
    }
  }
  return { method: req.method ?? '', url: req.url ?? '', contentType, raw: body.toString('latin1'), fields, files };
}

function renderer(env: Record<string, string> = {}): Renderer {
  return createRenderer(loadConfig({ GOTENBERG_URL: gotenbergUrl, ...env }), logger);
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected a rejection');
}

/** A PDF of one page `width`×`height` pt with a link annotation per entry (rect in PDF space). */
async function pdfWithLinks(
  width: number,
  height: number,
  links: Array<{ uri: string; rect: [number, number, number, number] }>,
) {
  const doc = await PDFDocument.create();
  const page = doc.addPage([width, height]);
  page.drawText('Made by the fake Gotenberg', { x: 50, y: height - 50, size: 12 });
  const refs = links.map(({ uri, rect }) =>
    doc.context.register(
      doc.context.obj({
        Type: 'Annot',
        Subtype: 'Link',
        Rect: rect,
        Border: [0, 0, 0],
        A: { Type: 'Action', S: 'URI', URI: PDFString.of(uri) },
      }),
    ),
  );
  page.node.set(PDFName.of('Annots'), doc.context.obj(refs) as PDFArray);
  return Buffer.from(await doc.save());
}

function sendPdf(res: http.ServerResponse, pdf: Buffer) {
  res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': pdf.length });
  res.end(pdf);
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    readRequest(req)
      .then(async (request) => {
        received.push(request);
        await handler(request, res);
      })
      .catch((error: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`test server: ${String(error)}`);
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  gotenbergUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  received.length = 0;
});

describe('Gotenberg 8 requests', () => {
  it('is chosen when GOTENBERG_URL is set', async () => {
    const r = renderer();
    expect(r.name).toBe('gotenberg');
    await r.close();
  });

  it('posts HTML to /forms/chromium/convert/html with Gotenberg 8’s files and fields', async () => {
    const markers: string[] = [];
    handler = async (request, res) => {
      const index = request.files.find((f) => f.filename === 'index.html')!.content.toString('utf8');
      markers.push(
        ...[...index.matchAll(/href="(https:\/\/fields\.signet\.invalid\/[0-9a-f]+\/\d+)"/g)].map((m) => m[1]!),
      );
      const width = Number(request.fields.paperWidth) * 72;
      const height = Number(request.fields.paperHeight) * 72;
      // Field 0 at (100, 200) pt from the top-left, 150 × 30 pt; field 1 at (300, 400), 60 × 60.
      sendPdf(
        res,
        await pdfWithLinks(width, height, [
          { uri: 'https://example.com/own-link', rect: [10, 10, 20, 20] },
          { uri: markers[0]!, rect: [100, height - 230, 250, height - 200] },
          { uri: markers[1]!, rect: [300, height - 460, 360, height - 400] },
        ]),
      );
    };
    const r = renderer();
    const { pdf, fields } = await r.htmlToPdf({
      html:
        '<p>Hello <text-field name="A" role="Buyer" ' +
        'style="width:200px;height:40px"></text-field><signature-field name="B"></signature-field></p>',
      header: '<b>HEAD</b>',
      footer: 'FOOT <span class="pageNumber"></span>',
      size: 'Ledger',
    });
    await r.close();

    expect(received).toHaveLength(1);
    const request = received[0]!;
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/forms/chromium/convert/html');
    expect(request.contentType).toMatch(/^multipart\/form-data; boundary=/);
    expect(request.files.map((f) => [f.field, f.filename])).toEqual([
      ['files', 'index.html'],
      ['files', 'header.html'],
      ['files', 'footer.html'],
    ]);
    expect(request.raw).toContain('Content-Disposition: form-data; name="files"; filename="index.html"');
    // Ledger = 17 × 11 in; 0.5 in margins, 1 in bands where a header or footer is printed.
    expect(request.fields).toEqual({
      paperWidth: '17',
      paperHeight: '11',
      marginTop: '1',
      marginBottom: '1',
      marginLeft: '0.5',
      marginRight: '0.5',
      printBackground: 'true',
      preferCssPageSize: 'false',
      skipNetworkIdleEvent: 'true',
    });
    const [index, header, footer] = request.files.map((f) => f.content.toString('utf8'));
    expect(index).toMatch(
      /^<!doctype html><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none';/,
    );
    expect(index).toContain('<p>Hello <text-field name="A" role="Buyer" style="width:200px;height:40px"><svg');
    expect(markers).toHaveLength(2);
    expect(header).toMatch(
      /^<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy"/,
    );
    expect(header).toContain('<b>HEAD</b>');
    expect(footer).toContain('FOOT <span class="pageNumber"></span>');

    // Areas from the marker links, as fractions of the 1224 × 792 pt page, y from the top.
    expect(fields.map((f) => [f.name, f.type, f.role])).toEqual([
      ['A', 'text', 'Buyer'],
      ['B', 'signature', undefined],
    ]);
    const a = fields[0]!.area;
    expect(a.page).toBe(0);
    expect(a.x * 1224).toBeCloseTo(100, 6);
    expect(a.y * 792).toBeCloseTo(200, 6);
    expect(a.w * 1224).toBeCloseTo(150, 6);
    expect(a.h * 792).toBeCloseTo(30, 6);
    const b = fields[1]!.area;
    expect([b.x * 1224, b.y * 792, b.w * 1224, b.h * 792].map((v) => Math.round(v * 1000) / 1000)).toEqual([
      300, 400, 60, 60,
    ]);
    // The markers are gone; the document's own link stays.
    expect(await pdfLinkUris(pdf)).toEqual([['https://example.com/own-link']]);
  });

  it('sends only index.html and 0.5 in margins without header and footer', async () => {
    handler = async (_request, res) => sendPdf(res, await pdfWithLinks(595.28, 841.89, []));
    const r = renderer();
    const { fields } = await r.htmlToPdf({ html: '<p>No fields</p>', size: 'A4' });
    await r.close();
    expect(fields).toEqual([]);
    const request = received[0]!;
    expect(request.files.map((f) => f.filename)).toEqual(['index.html']);
    expect(request.fields).toMatchObject({
      paperWidth: '8.2677',
      paperHeight: '11.6929',
      marginTop: '0.5',
      marginBottom: '0.5',
    });
  });

  it('answers 422 naming the field when Gotenberg’s PDF has no box for it', async () => {
    handler = async (_request, res) => sendPdf(res, await pdfWithLinks(612, 792, []));
    const r = renderer();
    const error = await rejection(r.htmlToPdf({ html: '<text-field name="Lost"></text-field>', size: 'Letter' }));
    await r.close();
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/<text-field name="Lost"> has no box/);
  });

  it('refuses bad field tags before calling Gotenberg', async () => {
    const r = renderer();
    const error = await rejection(r.htmlToPdf({ html: '<foo-field></foo-field>', size: 'Letter' }));
    await r.close();
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/<foo-field>/);
    expect(received).toEqual([]);
  });

  it('posts DOCX to /forms/libreoffice/convert with exportFormFields=false', async () => {
    const answer = await pdfWithLinks(612, 792, []);
    handler = (_request, res) => sendPdf(res, answer);
    const docx = makeDocx([{ paragraph: '{{Sign;type=signature}}' }]);
    const r = renderer();
    const pdf = await r.docxToPdf({ docx, filename: 'My Contract (final).DOCX' });
    await r.close();
    expect(pdf.equals(answer)).toBe(true);
    const request = received[0]!;
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/forms/libreoffice/convert');
    expect(request.contentType).toMatch(/^multipart\/form-data; boundary=/);
    expect(request.fields).toEqual({ exportFormFields: 'false' });
    expect(request.files).toHaveLength(1);
    expect(request.files[0]!.field).toBe('files');
    expect(request.files[0]!.filename).toBe('document.docx');
    expect(request.files[0]!.content.equals(docx)).toBe(true);
  });

  it('refuses bytes that are no Word document before calling Gotenberg', async () => {
    const r = renderer();
    const error = await rejection(r.docxToPdf({ docx: Buffer.from('not a document'), filename: 'x.docx' }));
    await r.close();
    expect(error.status).toBe(422);
    expect(received).toEqual([]);
  });

  it('runs at most RENDER_CONCURRENCY requests at once', async () => {
    let inFlight = 0;
    let peak = 0;
    const answer = await pdfWithLinks(612, 792, []);
    handler = async (_request, res) => {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 50));
      inFlight -= 1;
      sendPdf(res, answer);
    };
    const r = renderer({ RENDER_CONCURRENCY: '1' });
    const docx = makeDocx([{ paragraph: 'x' }]);
    await Promise.all([1, 2, 3].map(() => r.docxToPdf({ docx, filename: 'a.docx' })));
    await r.close();
    expect(received).toHaveLength(3);
    expect(peak).toBe(1);
  });
});

describe('Gotenberg errors', () => {
  const docx = makeDocx([{ paragraph: 'x' }]);

  it('maps 4xx to 422 with Gotenberg’s message', async () => {
    handler = (_request, res) => {
      res.writeHead(400, { 'content-type': 'text/plain; charset=UTF-8' });
      res.end(
        "Invalid form data: form field 'paperWidth' is invalid (got 'abc', resulting to strconv.ParseFloat: parsing " +
          '"abc": invalid syntax)',
      );
    };
    const r = renderer();
    const error = await rejection(r.htmlToPdf({ html: '<p>x</p>', size: 'Letter' }));
    await r.close();
    expect(error.status).toBe(422);
    expect(error.message).toMatch(
      /The HTML could not be converted to PDF: Invalid form data: form field 'paperWidth' is invalid/,
    );
  });

  it('maps 5xx to 503', async () => {
    for (const status of [500, 503]) {
      handler = (_request, res) => {
        res.writeHead(status, { 'content-type': 'text/plain; charset=UTF-8' });
        res.end(status === 503 ? 'Service Unavailable' : 'Internal Server Error');
      };
      const r = renderer();
      const error = await rejection(r.docxToPdf({ docx, filename: 'a.docx' }));
      await r.close();
      expect(error.status).toBe(503);
      expect(error.message).toMatch(new RegExp(`Gotenberg failed to convert the DOCX \\(${status}: `));
    }
  });

  it('gives up after RENDER_TIMEOUT_SECONDS with 503', async () => {
    handler = () => {
      // never answers
    };
    const r = renderer({ RENDER_TIMEOUT_SECONDS: '0.3' });
    const started = performance.now();
    const error = await rejection(r.docxToPdf({ docx, filename: 'a.docx' }));
    await r.close();
    expect(performance.now() - started).toBeLessThan(3000);
    expect(error.status).toBe(503);
    expect(error.message).toMatch(/Gotenberg did not convert the DOCX within 0.3 s/);
    server.closeAllConnections();
  });

  it('answers 503 when Gotenberg is unreachable', async () => {
    const port = await findFreePort();
    const r = createRenderer(loadConfig({ GOTENBERG_URL: `http://127.0.0.1:${port}` }), logger);
    const error = await rejection(r.htmlToPdf({ html: '<p>x</p>', size: 'Letter' }));
    await r.close();
    expect(error.status).toBe(503);
    expect(error.message).toMatch(new RegExp(`Gotenberg at http://127.0.0.1:${port} is unreachable: .*ECONNREFUSED`));
  });

  it('answers 503 when Gotenberg answers 200 without a PDF', async () => {
    handler = (_request, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>proxy login</html>');
    };
    const r = renderer();
    const error = await rejection(r.docxToPdf({ docx, filename: 'a.docx' }));
    await r.close();
    expect(error.status).toBe(503);
    expect(error.message).toMatch(/without a PDF/);
  });
});

describe('Gotenberg with a real Chromium behind it', () => {
  // Gotenberg's Chromium route: write the files to a directory, open file://…/index.html with
  // JavaScript and network on (Gotenberg's defaults), print with the form's settings, header.html
  // and footer.html as the header and footer templates.
  let browser: Browser;
  let bait: http.Server;
  let baitUrl: string;
  const baitRequests: string[] = [];

  beforeAll(async () => {
    const executablePath = await findExecutable(['chromium', 'chromium-browser', 'google-chrome']);
    if (!executablePath) throw new Error('these tests need chromium (apt-get install chromium)');
    browser = await chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS });
    bait = http.createServer((req, res) => {
      baitRequests.push(`${req.method} ${req.url}`);
      res.end('');
    });
    await new Promise<void>((resolve) => bait.listen(0, '127.0.0.1', resolve));
    baitUrl = `http://127.0.0.1:${(bait.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => bait?.close(resolve));
  });

  it('gets areas from Chromium’s PDF and loads nothing, though JavaScript and network are on', async () => {
    handler = async (request, res) => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-fake-gotenberg-'));
      const context = await browser.newContext();
      try {
        for (const file of request.files) await fs.writeFile(path.join(dir, file.filename), file.content);
        const template = (name: string) => request.files.find((f) => f.filename === name)?.content.toString('utf8');
        const page = await context.newPage();
        await page.goto(pathToFileURL(path.join(dir, 'index.html')).href, { waitUntil: 'load' });
        const f = request.fields;
        const inches = (v: string | undefined) => `${Number(v)}in`;
        const header = template('header.html');
        const footer = template('footer.html');
        const pdf = await page.pdf({
          width: inches(f.paperWidth),
          height: inches(f.paperHeight),
          margin: {
            top: inches(f.marginTop),
            bottom: inches(f.marginBottom),
            left: inches(f.marginLeft),
            right: inches(f.marginRight),
          },
          printBackground: f.printBackground === 'true',
          preferCSSPageSize: f.preferCssPageSize === 'true',
          displayHeaderFooter: Boolean(header || footer),
          headerTemplate: header ?? '<span></span>',
          footerTemplate: footer ?? '<span></span>',
        });
        sendPdf(res, pdf);
      } finally {
        await context.close();
        await fs.rm(dir, { recursive: true, force: true });
      }
    };
    const flex = 'display:inline-flex;flex-direction:column;justify-content:space-between;font:10px/1 sans-serif';
    const html = `<!doctype html><html><head>
        <link rel="stylesheet" href="${baitUrl}/style.css">
        <script>fetch('${baitUrl}/script-fetch'); document.write('<img src="${baitUrl}/written.png">');</script>
        <script src="${baitUrl}/script.js"></script>
      </head><body>
        <p>Terms <img src="${baitUrl}/x.png" onerror="fetch('${baitUrl}/onerror')"></p>
        <iframe src="file:///etc/passwd"></iframe>
        <p style="margin-top: 100px">Sign: <signature-field name="Sig" style="width: 160px; height: 60px; ${flex}"
          ><span>TLG</span><span style="align-self:flex-end">BRG</span></signature-field></p>
      </body></html>`;
    const r = renderer();
    const { pdf, fields } = await r.htmlToPdf({ html, header: `<img src="${baitUrl}/header.png">HEADG`, size: 'A5' });
    await r.close();
    await new Promise((resolve) => setTimeout(resolve, 300));

    expect(baitRequests).toEqual([]);
    const text = (await pdfPageTexts(pdf)).join('');
    expect(text).not.toMatch(/root:/);
    expect(text).toMatch(/HEADG/);
    const [size] = await pdfPageSizes(pdf);
    expect(Math.abs(size!.width - 419.53)).toBeLessThan(1); // A5 = 148 mm
    const words = await pdfWords(pdf);
    const tl = words.find((w) => w.text === 'TLG')!;
    const br = words.find((w) => w.text === 'BRG')!;
    const { x, y, w, h } = fields[0]!.area;
    expect(Math.abs(tl.xMin - x * size!.width)).toBeLessThan(2);
    expect(Math.abs(tl.yMin - y * size!.height)).toBeLessThan(2);
    expect(Math.abs(br.xMax - (x + w) * size!.width)).toBeLessThan(2);
    expect(Math.abs(br.yMax - (y + h) * size!.height)).toBeLessThan(2);
    expect(w * size!.width).toBeCloseTo(120, 0);
    expect(await pdfLinkUris(pdf)).toEqual([[]]);
  }, 30_000);
});
