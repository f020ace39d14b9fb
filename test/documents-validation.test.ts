/**
 * Documents and images are checked before anything is stored, and a job that cannot succeed stops
 * (issue 12 §1, "Zip bomb" and "Broken inputs → 4xx, not 500"; docs/security.md "Documents and
 * images"), against a real server on loopback, real PostgreSQL, real PDFs, LibreOffice:
 *
 * - broken PDFs (truncated at several points, garbage after a %PDF header, a page tree with a
 *   cycle, password-encrypted) are a 422 "… is not a valid PDF" through REST and GraphQL, nothing
 *   stored;
 * - a DOCX zip bomb (a lying size or an honest one), or an archive of too many entries, is a 422 in
 *   well under 2 s and LibreOffice is never started (SOFFICE_PATH is a wrapper that logs each
 *   start, and the `ulimit -v` it runs under); a normal DOCX still converts under the memory
 *   limit, and a limit too small to run LibreOffice is a 422 saying so;
 * - a junk image value (base64 that is no image, a PNG cut short — which pdf-lib's decoder never
 *   returns from —, a URL answering other bytes, an image over the pixel limit) sent through the
 *   REST API, even with `completed: true`, is a 422 naming the field and nothing is written; good
 *   images are kept as the completion draws them;
 * - a job that cannot succeed stops: a permanent failure (an AppError VALIDATION) runs once, a
 *   transient one a bounded number of times, and the completion records why on the submission
 *   (completion_error, a fail_completion event) and shows it over GraphQL and REST.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import * as mupdf from 'mupdf';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { loadConfig } from '../src/config.ts';
import type { AppError } from '../src/errors.ts';
import { AppError as ServiceError } from '../src/errors.ts';
import { createRenderer } from '../src/rendering/renderer.ts';
import { storeFile } from '../src/documents/store-file.ts';
import { createLocalStorage } from '../src/documents/storage.ts';
import type { JobFailure } from '../src/jobs/job-queue.ts';
import { makeDocx } from './fixtures/rendering/make-docx.ts';
import { acceptConsentViaApi, graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { deflatedEntry, docxPackageEntries, repeatedByteEntry, zipArchive } from './helpers/zip-archives.ts';

let t: TestApp;
let alice: CreatedAccount;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-documents-validation-'));
/** Each start of LibreOffice appends a line here: `<ulimit -v> <args…>`. */
const sofficeLog = path.join(tmp, 'soffice-starts.log');
/** SOFFICE_PATH for the server: logs the start and its address-space limit, then runs the real soffice. */
const sofficeWrapper = path.join(tmp, 'soffice-logged');
const realSoffice = execFileSync('sh', ['-c', 'command -v soffice || command -v libreoffice']).toString().trim();
fs.writeFileSync(sofficeWrapper, `#!/bin/sh\necho "$(ulimit -v) $*" >> '${sofficeLog}'\nexec '${realSoffice}' "$@"\n`, {
  mode: 0o755,
});
const sofficeStarts = () =>
  fs.existsSync(sofficeLog) ? fs.readFileSync(sofficeLog, 'utf8').trim().split('\n').filter(Boolean) : [];

const api = (method: string, route: string, body?: unknown) => rest(t.url, alice.apiKey, method, route, body);
const gql = (query: string, variables: Record<string, unknown>) =>
  graphql(t.url, query, { key: alice.apiKey, variables }).then(
    ({ body }) => body as { data?: any; errors?: { message: string; extensions?: Record<string, any> }[] },
  );

/** Rows and stored bytes that a refused request must not leave behind. */
async function written() {
  const filesDir = path.join(t.config.dataDir, 'files');
  const storedBytes = fs.existsSync(filesDir)
    ? fs.readdirSync(filesDir, { recursive: true }).filter((p) => /[0-9a-f]{64}$/.test(String(p))).length
    : 0;
  return {
    templates: await t.db.template.count(),
    storedFiles: await t.db.storedFile.count(),
    storedBytes,
    submissions: await t.db.submission.count(),
    submitters: await t.db.submitter.count(),
  };
}

/**
 * A one-page PDF whose page tree has a cycle: the root /Pages node lists, besides the page, an
 * intermediate /Pages node whose only kid is the root again. Written by hand with a correct xref,
 * so no reader repairs it first.
 */
function pageTreeCyclePdf(): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>',
    '<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>',
  ];
  let body = '%PDF-1.7\n';
  const offsets: number[] = [];
  objects.forEach((object, i) => {
    offsets.push(Buffer.byteLength(body, 'latin1'));
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = Buffer.byteLength(body, 'latin1');
  body +=
    `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n` +
    `${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

beforeAll(async () => {
  t = await startTestApp({ env: { SOFFICE_PATH: sofficeWrapper, DOWNLOAD_ALLOW_PRIVATE: 'true' } });
  alice = await t.createAccount({ name: 'Documents Inc', email: 'alice@documents.test' });
});
afterAll(async () => {
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('broken PDFs', () => {
  const letter = fixturePdf('documenso-letter-size.pdf');
  const sample = fixturePdf('docuseal-sample-document.pdf');
  const tracemonkey = fixturePdf('pdfjs-tracemonkey.pdf');
  const rotated = fixturePdf('pdfjs-hello_world_rotated.pdf');
  const cut = (bytes: Buffer, at: number) => bytes.subarray(0, at < 1 ? Math.floor(bytes.length * at) : at);
  /** `bytes` with `from` (which must be there) replaced by `to`, of the same length: offsets stay right. */
  const misspelt = (bytes: Buffer, from: string, to: string) => {
    const text = bytes.toString('latin1');
    if (!text.includes(from) || from.length !== to.length) throw new Error(`cannot misspell ${from}`);
    return Buffer.from(text.replace(from, to), 'latin1');
  };
  const locked = () => {
    const doc = new mupdf.PDFDocument(letter);
    try {
      return Buffer.from(doc.saveToBuffer('encrypt=aes-256,user-password=secret,owner-password=owner').asUint8Array());
    } finally {
      doc.destroy();
    }
  };
  // [what, bytes, the error after "documents[0] "]
  const broken: [string, Buffer, RegExp][] = [
    // Cut inside the page object: mupdf repairs the file to one page whose object is gone, and
    // used to throw "cycle in page tree" from the text-tag scan (a 500).
    ['letter cut at 120 bytes', cut(letter, 120), /^is not a valid PDF: page 1 cannot be read/],
    ['letter cut at 290 bytes', cut(letter, 290), /^is not a valid PDF: page 1 cannot be read/],
    ['letter cut at 50 %', cut(letter, 0.5), /^is not a valid PDF/],
    ['sample cut at 50 %', cut(sample, 0.5), /^is not a valid PDF/],
    ['sample cut at 90 %', cut(sample, 0.9), /^is not a valid PDF/],
    ['tracemonkey cut at 50 %', cut(tracemonkey, 0.5), /^is not a valid PDF/],
    ['tracemonkey cut at 90 %', cut(tracemonkey, 0.9), /^is not a valid PDF/],
    [
      'garbage after a %PDF header',
      Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(4000, 'garbage ')]),
      /^is not a valid PDF: its structure cannot be parsed/,
    ],
    ['a page tree with a cycle', pageTreeCyclePdf(), /^is not a valid PDF/],
    ['encrypted with a user password', locked(), /^is an encrypted PDF protected by a password/],
    // Read cleanly by mupdf (its xref is intact; it finds the pages by a slower lookup), but not by
    // pdf-lib, which draws on the file at completion: the check on pdf-lib's worker refuses them.
    [
      'a page whose /Type is misspelt',
      misspelt(rotated, '5 0 obj\n<< /Type /Page ', '5 0 obj\n<< /Type /Pagx '),
      /^is not a valid PDF: its page tree holds 4 page\(s\) where 5 can be read/,
    ],
    [
      'a catalog whose /Type is misspelt',
      misspelt(rotated, '/Type /Catalog', '/Type /CaRalog'),
      /^is not a valid PDF: /,
    ],
  ];

  it('REST POST /templates/pdf: each is a 422 "documents[0] is not a valid PDF …", nothing stored', async () => {
    const before = await written();
    for (const [what, bytes, error] of broken) {
      const { status, json } = await api('POST', '/templates/pdf', {
        name: what,
        documents: [{ name: 'broken.pdf', file: base64(bytes) }],
      });
      expect({ what, status }).toEqual({ what, status: 422 });
      expect(Object.keys(json), what).toEqual(['error']);
      expect(json.error.replace(/^documents\[0\] /, ''), what).toMatch(error);
    }
    expect(await written()).toEqual(before);
  });

  it('GraphQL createTemplateFromPdf: a VALIDATION error naming the document, nothing stored', async () => {
    const before = await written();
    for (const [what, bytes, error] of broken.slice(0, 3)) {
      const body = await gql(
        'mutation($input: CreateTemplateFromFileInput!) { createTemplateFromPdf(input: $input) { template { id } } }',
        {
          input: { name: what, documents: [{ name: 'broken.pdf', file: base64(bytes) }] },
        },
      );
      expect(body.errors?.[0]?.extensions?.code, what).toBe('VALIDATION');
      expect(body.errors?.[0]?.message.replace(/^documents\[0\] /, ''), what).toMatch(error);
    }
    expect(await written()).toEqual(before);
  });

  it('PUT /templates/{id}/documents refuses a broken replacement and keeps the template as it was', async () => {
    const created = await api('POST', '/templates/pdf', {
      name: 'Kept',
      documents: [{ name: 'letter', file: base64(letter) }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const before = await written();
    const { status, json } = await api('PUT', `/templates/${created.json.id}/documents`, {
      documents: [{ name: 'broken', file: base64(cut(letter, 120)) }],
    });
    expect(status).toBe(422);
    expect(json.error).toMatch(/^documents\[0\] is not a valid PDF/);
    expect(await written()).toEqual(before);
    expect((await api('GET', `/templates/${created.json.id}`)).json.documents).toHaveLength(1);
  });

  it('still takes a PDF mupdf repairs, kept as a rewrite that pdf-lib reads', async () => {
    // The letter without its last bytes (the %%EOF line): the xref must be rebuilt.
    const { status, json } = await api('POST', '/templates/pdf', {
      name: 'Repaired',
      documents: [{ name: 'repaired', file: base64(cut(letter, letter.length - 8)) }],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.documents).toHaveLength(1);
  });
});

describe('DOCX archives', () => {
  const createFromDocx = (docx: Buffer, name = 'bomb.docx') =>
    api('POST', '/templates/docx', { name: 'Docx', documents: [{ name, file: base64(docx) }] });

  it('refuses zip bombs with a 422 in well under 2 s, without starting LibreOffice', async () => {
    // One deflated stream of 300 MB of spaces (~300 KB), declared three ways.
    const inflated = 300 * 1024 * 1024;
    const bombEntry = await repeatedByteEntry('word/document.xml', inflated);
    const bombs: [string, Buffer, RegExp][] = [
      // As bench/abuse.ts zipBombDocx builds it (smaller): the directory tells the truth, over the limit.
      [
        'declared size',
        zipArchive([...docxPackageEntries(), bombEntry]),
        /^bomb\.docx inflates to more than 100 MB; at most 100 MB are accepted \(DOCX_MAX_UNCOMPRESSED_MB\)\.$/,
      ],
      // Lying headers: 0 bytes (a 4 GB entry wraps to that in a 32-bit field), then 1 KB.
      [
        'size 0 in both headers',
        zipArchive([...docxPackageEntries(), { ...bombEntry, declaredSize: 0 }]),
        /^bomb\.docx is not a valid DOCX archive: entry "word\/document\.xml": too many bytes/,
      ],
      [
        'size 1 KB in both headers',
        zipArchive([...docxPackageEntries(), { ...bombEntry, declaredSize: 1024 }]),
        /^bomb\.docx is not a valid DOCX archive: entry "word\/document\.xml": too many bytes/,
      ],
      // Under the limit each, over it together.
      [
        'three entries of 40 MB',
        zipArchive([
          ...docxPackageEntries(),
          ...(await Promise.all([1, 2, 3].map((i) => repeatedByteEntry(`word/part${i}.xml`, 40 * 1024 * 1024)))),
        ]),
        /^bomb\.docx inflates to more than 100 MB/,
      ],
    ];
    const before = await written();
    for (const [what, docx, error] of bombs) {
      expect(docx.length, what).toBeLessThan(1024 * 1024);
      const started = performance.now();
      const { status, json } = await createFromDocx(docx);
      const ms = performance.now() - started;
      expect({ what, status, json }).toEqual({ what, status: 422, json: { error: expect.stringMatching(error) } });
      expect(ms, what).toBeLessThan(2000);
    }
    expect(sofficeStarts()).toEqual([]);
    expect(await written()).toEqual(before);
  });

  it('refuses an archive of more than DOCX_MAX_ENTRIES entries, and one that is no ZIP inside', async () => {
    const many = zipArchive([
      ...docxPackageEntries(),
      ...Array.from({ length: 2000 }, (_, i) => deflatedEntry(`word/media/e${i}.xml`, '<x/>')),
    ]);
    const { status, json } = await createFromDocx(many, 'many.docx');
    expect({ status, json }).toEqual({
      status: 422,
      json: { error: 'many.docx has 2002 entries; at most 2000 are accepted (DOCX_MAX_ENTRIES).' },
    });

    const truncated = zipArchive(docxPackageEntries()).subarray(0, 60);
    const cut = await createFromDocx(truncated, 'cut.docx');
    expect(cut.status).toBe(422);
    expect(cut.json.error).toMatch(/^cut\.docx is not a valid DOCX archive: /);
    expect(sofficeStarts()).toEqual([]);
  });

  it('GraphQL createTemplateFromDocx refuses a bomb with a VALIDATION error', async () => {
    const bomb = zipArchive([
      ...docxPackageEntries(),
      await repeatedByteEntry('word/document.xml', 200 * 1024 * 1024, { declaredSize: 0 }),
    ]);
    const body = await gql(
      'mutation($input: CreateTemplateFromFileInput!) { createTemplateFromDocx(input: $input) { template { id } } }',
      {
        input: { name: 'Bomb', documents: [{ name: 'bomb.docx', file: base64(bomb) }] },
      },
    );
    expect(body.errors?.[0]?.extensions?.code).toBe('VALIDATION');
    expect(body.errors?.[0]?.message).toMatch(
      /is not a valid DOCX archive: entry "word\/document\.xml": too many bytes/,
    );
    expect(sofficeStarts()).toEqual([]);
  });

  it('still converts a normal DOCX, with LibreOffice under the default address-space limit (2048 MB)', async () => {
    const docx = makeDocx([{ paragraph: 'Lease agreement' }, { paragraph: 'Tenant: {{Tenant Name;role=Tenant}}' }]);
    const { status, json } = await createFromDocx(docx, 'lease.docx');
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.fields.map((f: { name: string }) => f.name)).toEqual(['Tenant Name']);
    const starts = sofficeStarts();
    expect(starts).toHaveLength(1);
    expect(starts[0]).toMatch(/^2097152 /); // ulimit -v is in KiB
  }, 120_000);

  it('never sends a bomb to Gotenberg either', async () => {
    let requests = 0;
    const gotenberg = http.createServer((_request, response) => {
      requests += 1;
      response.writeHead(500).end('should not be called');
    });
    await new Promise<void>((resolve) => gotenberg.listen(0, '127.0.0.1', resolve));
    const renderer = createRenderer(
      loadConfig({ GOTENBERG_URL: `http://127.0.0.1:${(gotenberg.address() as { port: number }).port}` }),
      pino({ level: 'silent' }),
    );
    try {
      const bomb = zipArchive([
        ...docxPackageEntries(),
        await repeatedByteEntry('word/document.xml', 200 * 1024 * 1024, { declaredSize: 0 }),
      ]);
      const error = await renderer.docxToPdf({ docx: bomb, filename: 'bomb.docx' }).then(
        () => undefined,
        (e: AppError) => e,
      );
      expect(error?.code).toBe('VALIDATION');
      expect(error?.message).toMatch(/^bomb\.docx is not a valid DOCX archive: /);
      expect(requests).toBe(0);
    } finally {
      await renderer.close();
      await new Promise((resolve) => gotenberg.close(resolve));
    }
  });

  it('answers 422 naming SOFFICE_MAX_MEMORY_MB when LibreOffice cannot run within it', async () => {
    const logger = pino({ level: 'silent' });
    const renderer = createRenderer(loadConfig({ SOFFICE_PATH: sofficeWrapper, SOFFICE_MAX_MEMORY_MB: '100' }), logger);
    try {
      const error = await renderer.docxToPdf({ docx: makeDocx([{ paragraph: 'Hello' }]), filename: 'hello.docx' }).then(
        () => undefined,
        (e: AppError) => e,
      );
      expect(error?.code).toBe('VALIDATION');
      expect(error?.message).toBe(
        'hello.docx could not be converted to PDF: LibreOffice ran out of memory (limit 100 MB, ' +
          'SOFFICE_MAX_MEMORY_MB).',
      );
      expect(sofficeStarts().at(-1)).toMatch(/^102400 /);
    } finally {
      await renderer.close();
    }
  }, 120_000);
});

/** A PNG (or JPEG) of `width` × `height` drawn by mupdf: a black stroke on a transparent ground. */
function drawnImage(width: number, height: number, format: 'png' | 'jpeg' = 'png'): Buffer {
  const pixmap = new mupdf.Pixmap(mupdf.ColorSpace.DeviceRGB, [0, 0, width, height], format === 'png');
  try {
    const pixels = pixmap.getPixels();
    pixels.fill(format === 'png' ? 0 : 255);
    const stride = pixmap.getStride();
    const n = pixmap.getNumberOfComponents();
    const row = Math.floor(height / 2);
    for (let x = 0; x < width; x += 1)
      for (let c = 0; c < n; c += 1) pixels[row * stride + x * n + c] = c === 3 ? 255 : 0;
    return Buffer.from(format === 'png' ? pixmap.asPNG() : pixmap.asJPEG(90, false));
  } finally {
    pixmap.destroy();
  }
}

describe('image values', () => {
  let templateId: number;
  let server: http.Server;
  let serverUrl: string;
  const served = new Map<string, { type: string; body: Buffer }>();

  beforeAll(async () => {
    const area = (y: number) => [{ x: 72, y, w: 200, h: 40, page: 1 }];
    const created = await api('POST', '/templates/pdf', {
      name: 'Images',
      documents: [{ name: 'letter', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
      fields: [
        { name: 'Code', role: 'Signer', areas: area(72) },
        { name: 'Stamp', type: 'stamp', role: 'Signer', required: false, areas: area(150) },
        { name: 'Photo', type: 'image', role: 'Signer', required: false, areas: area(250) },
        { name: 'Sign', type: 'signature', role: 'Signer', required: false, areas: area(350) },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    templateId = created.json.id;
    server = http.createServer((request, response) => {
      const file = served.get(request.url ?? '');
      if (!file) return response.writeHead(404).end();
      response.writeHead(200, { 'content-type': file.type }).end(file.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    serverUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  const createCompleted = (values: Record<string, unknown>) =>
    api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'junk@images.test', completed: true, values: { Code: 'abc', ...values } }],
    });

  it('refuses a junk image with completed: true with a 422 naming the field, and writes nothing', async () => {
    const png = drawnImage(300, 100);
    served.set('/junk.png', { type: 'image/png', body: Buffer.from('<html>not an image</html>') });
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        'base64 of text as a PNG data URL',
        { Stamp: `data:image/png;base64,${base64(Buffer.from('not an image at all'))}` },
        /^values\.Stamp in `submitters\[0\]` is not an image \(PNG or JPEG\)\.$/,
      ],
      [
        'base64 of text',
        { Photo: base64(Buffer.from('still not an image, but long enough to be taken for base64 data')) },
        /^values\.Photo in `submitters\[0\]` is not an image/,
      ],
      // pdf-lib's PNG decoder loops for ever on this one: it must never reach the completion.
      [
        'a PNG cut in half',
        { Stamp: `data:image/png;base64,${base64(png.subarray(0, png.length >> 1))}` },
        /^values\.Stamp in `submitters\[0\]` is a damaged image/,
      ],
      [
        'a URL answering HTML',
        { Photo: `${serverUrl}/junk.png` },
        /^values\.Photo in `submitters\[0\]` is not an image/,
      ],
      [
        'a drawn signature that is no image',
        { Sign: `data:image/png;base64,${base64(Buffer.alloc(200, 7))}` },
        /^values\.Sign in `submitters\[0\]` is not an image/,
      ],
      [
        'over 25 megapixels',
        { Photo: `data:image/png;base64,${base64(drawnImage(6000, 4500))}` },
        /^values\.Photo in `submitters\[0\]` is 6000 × 4500 pixels, over 25 megapixels \(IMAGE_MAX_MEGAPIXELS\)\.$/,
      ],
    ];
    const before = await written();
    for (const [what, values, error] of cases) {
      const started = performance.now();
      const { status, json } = await createCompleted(values);
      expect({ what, status, json }).toEqual({ what, status: 422, json: { error: expect.stringMatching(error) } });
      expect(performance.now() - started, what).toBeLessThan(5000);
    }
    expect(await written()).toEqual(before);
    await t.outboxRelayed();
    expect(
      await t.db.$queryRaw<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM agenda.jobs WHERE name = 'complete-submission'`,
    ).toEqual([{ n: 0 }]);
  });

  it('PUT /submitters/{id} refuses a junk image value the same way', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'later@images.test' }],
    });
    expect(created.status).toBe(200);
    const { status, json } = await api('PUT', `/submitters/${created.json[0].id}`, {
      completed: true,
      values: { Code: 'x', Stamp: `data:image/png;base64,${base64(Buffer.from('junk'))}` },
    });
    expect(status).toBe(422);
    expect(json.error).toMatch(/^values\.Stamp in `submitter` is not an image/);
    const submitter = await t.db.submitter.findUniqueOrThrow({ where: { id: created.json[0].id } });
    expect(submitter.completedAt).toBeNull();
    expect(submitter.values).toEqual({});
  });

  it(
    'signing form uploads: a junk image is refused; ' + "a file that only claims to be a PNG can't be an image value",
    async () => {
      const created = await api('POST', '/submissions', {
        template_id: templateId,
        send_email: false,
        submitters: [{ role: 'Signer', email: 'form@images.test' }],
      });
      const slug = created.json[0].slug as string;
      const upload = async (type: string, bytes: Buffer, name: string, contentType: string) => {
        const form = new FormData();
        form.append('submitter_slug', slug);
        form.append('type', type);
        form.append('file', new Blob([new Uint8Array(bytes)], { type: contentType }), name);
        const response = await fetch(`${t.url}/api/attachments`, { method: 'POST', body: form });
        return { status: response.status, json: await response.json() };
      };
      const png = drawnImage(300, 100);
      expect(await upload('image', png.subarray(0, png.length >> 1), 'cut.png', 'image/png')).toEqual({
        status: 422,
        json: { error: 'image is not a readable image file' },
      });
      expect(await upload('signature', Buffer.from('junk'), 'sig.png', 'image/png')).toEqual({
        status: 422,
        json: { error: 'signature error, try to sign on another device' },
      });
      expect(await upload('image', drawnImage(6000, 4500), 'big.png', 'image/png')).toEqual({
        status: 422,
        json: { error: 'image is 6000 × 4500 pixels, over 25 megapixels (IMAGE_MAX_MEGAPIXELS)' },
      });

      const claimed = await upload('file', png.subarray(0, png.length >> 1), 'photo.png', 'image/png');
      expect(claimed.status).toBe(200);
      expect(claimed.json.content_type).toBe('application/octet-stream');
      const fields = (
        await gql('query($slug: String!) { signingForm(slug: $slug) { fields { uuid name } } }', { slug })
      ).data.signingForm.fields as { uuid: string; name: string }[];
      const photo = fields.find((f) => f.name === 'Photo')!.uuid;
      const code = fields.find((f) => f.name === 'Code')!.uuid;
      await acceptConsentViaApi(t.url, slug);
      const body = await gql(
        'mutation($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { slug } }',
        { slug, values: { [code]: 'x', [photo]: claimed.json.uuid } },
      );
      expect(body.errors?.[0]?.extensions?.code).toBe('VALIDATION');
      expect(body.errors?.[0]?.message).toMatch(/Photo must be a PNG or JPEG image/);

      const real = await upload('file', png, 'real.png', 'image/png');
      expect(real.json.content_type).toBe('image/png');
    },
  );

  it('keeps good images as they will be drawn: JPEG as sent, GIF as PNG, and completes with them', async () => {
    const jpeg = drawnImage(320, 120, 'jpeg');
    // mupdf writes no GIF: a 1 × 1 GIF89a.
    const gif = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
    served.set('/stamp.gif', { type: 'image/gif', body: gif });
    const { status, json } = await createCompleted({
      Photo: `data:image/jpeg;base64,${base64(jpeg)}`,
      Stamp: `${serverUrl}/stamp.gif`,
      Sign: `data:image/png;base64,${base64(drawnImage(300, 100))}`,
    });
    expect(status, JSON.stringify(json)).toBe(200);
    const submitter = await t.db.submitter.findUniqueOrThrow({ where: { id: json[0].id } });
    const values = submitter.values as Record<string, string>;
    const fileOf = async (name: string) => {
      const fields = (await t.db.submission.findUniqueOrThrow({ where: { id: submitter.submissionId } }))
        .templateFields as { uuid: string; name: string }[];
      const uuid = values[fields.find((f) => f.name === name)!.uuid]!;
      return t.db.storedFile.findUniqueOrThrow({ where: { uuid } });
    };
    const photo = await fileOf('Photo');
    expect(photo.contentType).toBe('image/jpeg');
    expect(photo.sha256).toBe((await import('node:crypto')).createHash('sha256').update(jpeg).digest('hex'));
    const stamp = await fileOf('Stamp');
    expect(stamp.contentType).toBe('image/png');
    expect(stamp.filename).toMatch(/\.png$/);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    const documents = await t.db.completedDocument.findMany({ where: { submissionId: submitter.submissionId } });
    expect(documents.map((d) => d.kind).sort()).toEqual(['audit_log', 'document']);
  }, 90_000);
});

describe('jobs that cannot succeed', () => {
  it('a permanent failure (AppError VALIDATION) runs once; ' +
    'a transient one is retried a bounded number of times; both say why they gave up', async () => {
    const runs = { permanent: 0, transient: 0 };
    const gaveUp: Record<string, JobFailure> = {};
    t.jobs.define<{ kind: 'permanent' }>(
      'test-permanent-failure',
      async () => {
        runs.permanent += 1;
        throw new ServiceError('VALIDATION', 'this data can never be processed');
      },
      {
        retry: { maxAttempts: 5, delayMs: () => 10 },
        onGiveUp: async (_data, failure) => void (gaveUp.permanent = failure),
      },
    );
    t.jobs.define<{ kind: 'transient' }>(
      'test-transient-failure',
      async () => {
        runs.transient += 1;
        throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
      },
      {
        retry: { maxAttempts: 3, delayMs: () => 10 },
        onGiveUp: async (_data, failure) => void (gaveUp.transient = failure),
      },
    );
    await t.jobs.enqueue('test-permanent-failure', { kind: 'permanent' });
    await t.jobs.enqueue('test-transient-failure', { kind: 'transient' });
    await t.jobs.waitForIdle({ timeoutMs: 20_000, withinMs: 1000 });
    expect(runs).toEqual({ permanent: 1, transient: 3 });
    expect(gaveUp.permanent).toMatchObject({ attempt: 0, permanent: true, error: { code: 'VALIDATION' } });
    expect(gaveUp.transient).toMatchObject({ attempt: 2, permanent: false });
    const [row] = await t.db.$queryRaw<
      { fail_count: number; next_run_at: Date | null }[]
    >`SELECT fail_count, next_run_at FROM agenda.jobs WHERE name = 'test-permanent-failure'`;
    expect(row).toMatchObject({ fail_count: 1 });
  }, 30_000);

  it('a completion that can never draw its data stops after one run, records why, ' +
    'and shows it over GraphQL and REST', async () => {
    const area = [{ x: 72, y: 150, w: 200, h: 40, page: 1 }];
    const template = await api('POST', '/templates/pdf', {
      name: 'Doomed',
      documents: [{ name: 'letter', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
      fields: [{ name: 'Stamp', type: 'stamp', role: 'Signer', required: false, areas: area }],
    });
    const created = await api('POST', '/submissions', {
      template_id: template.json.id,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'doomed@images.test' }],
    });
    const submitterId = created.json[0].id as number;
    const submissionId = created.json[0].submission_id as number;
    // A value stored before images were checked (or written around the API): a PNG cut in half,
    // on which pdf-lib's decoder would never return.
    const png = drawnImage(300, 100);
    const junk = await storeFile(
      { db: t.db, storage: createLocalStorage(path.join(t.config.dataDir, 'files')) },
      {
        accountId: alice.accountId,
        bytes: png.subarray(0, png.length >> 1),
        filename: 'stamp.png',
        contentType: 'image/png',
      },
    );
    const submission = await t.db.submission.findUniqueOrThrow({ where: { id: submissionId } });
    const stamp = (submission.templateFields as { uuid: string; name: string }[]).find((f) => f.name === 'Stamp')!;
    await t.db.submitter.update({ where: { id: submitterId }, data: { values: { [stamp.uuid]: junk.uuid } } });

    const started = Date.now();
    const completed = await api('PUT', `/submitters/${submitterId}`, { completed: true });
    expect(completed.status, JSON.stringify(completed.json)).toBe(200);
    await t.outboxRelayed();
    await t.jobs.waitForIdle({ timeoutMs: 30_000 });
    expect(Date.now() - started).toBeLessThan(20_000); // not 5 + 10 + 20 + 40 s of retries

    const failures = t.logs.filter(
      (l) => l.job === 'complete-submission' && String(l.msg).startsWith('job complete-submission failed'),
    );
    expect(failures.map((l) => l.msg)).toEqual(['job complete-submission failed (attempt 1, permanently); giving up']);
    const [job] = await t.db.$queryRaw<{ fail_count: number; next_run_at: Date | null }[]>`
      SELECT fail_count, next_run_at FROM agenda.jobs
       WHERE name = 'complete-submission' AND data->'payload'->>'submitterId' = ${String(submitterId)}`;
    expect(job).toEqual({ fail_count: 1, next_run_at: null });

    const stored = await t.db.submission.findUniqueOrThrow({ where: { id: submissionId } });
    expect(stored.completionError).toMatch(/^field "Stamp": the image [0-9a-f-]{36} cannot be read: /);
    expect(stored.completionFailedAt).toBeInstanceOf(Date);
    const events = await t.db.submissionEvent.findMany({ where: { submissionId, eventType: 'fail_completion' } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      submitterId,
      data: { reason: stored.completionError, permanent: true, attempts: 1 },
    });
    expect(await t.db.completedDocument.count({ where: { submissionId } })).toBe(0);

    const viaGraphql = await gql(
      'query($id: Int!) { submission(id: $id) ' +
        '{ status completionError { message failedAt } events { eventType data } } }',
      { id: submissionId },
    );
    expect(viaGraphql.data.submission.completionError).toEqual({
      message: stored.completionError,
      failedAt: stored.completionFailedAt!.toISOString(),
    });
    expect(viaGraphql.data.submission.events.at(-1)).toMatchObject({
      eventType: 'fail_completion',
      data: { reason: stored.completionError },
    });
    const viaRest = await api('GET', `/submissions/${submissionId}`);
    expect(viaRest.json.completion_error).toEqual({
      message: stored.completionError,
      failed_at: stored.completionFailedAt!.toISOString(),
    });
    expect(viaRest.json.submission_events.map((e: { event_type: string }) => e.event_type)).toContain(
      'fail_completion',
    );
    expect(viaRest.json.documents).toEqual([]);
  }, 60_000);

  it('shows no completion_error on a submission whose completion succeeded', async () => {
    const [submission] = await t.db.submission.findMany({
      where: { completedDocuments: { some: { kind: 'audit_log' } } },
      take: 1,
    });
    expect(submission).toBeDefined();
    const viaRest = await api('GET', `/submissions/${submission!.id}`);
    expect(viaRest.json.completion_error).toBeNull();
    expect(viaRest.json.documents.length).toBeGreaterThan(0);
  });
});
