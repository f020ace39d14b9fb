/**
 * Signer uploads are bounded (issue 23, "Signer uploads"; docs/security.md "Signer uploads"),
 * against the service as a real process (test/helpers/clock-service.ts: main.ts startSignet with
 * a clock the test moves forward through a file) on a real PostgreSQL and DATA_DIR:
 * - one slug's 3 × 45 MB: the third is refused with the quota's error (SIGNER_UPLOADS_MAX_MB at
 *   its default, 100 MB), and neither its row nor its bytes are stored;
 * - 20 uploads of one slug at once cannot pass the quota together, in bytes (20 × 1 MB with 90 MB
 *   stored: 10 pass) or in files (SIGNER_UPLOADS_MAX_FILES 15 here: 15 of 20 pass), and the refused
 *   ones leave no bytes behind;
 * - a file is typed by its bytes: a `.png` that is HTML, a PDF claim that is not a PDF, are
 *   application/octet-stream; a program named `.png` is refused; a real PDF named `.png` is a PDF;
 * - the sweep (every second here) removes the rows and bytes of uploads no value uses once the
 *   form is completed or declined, and in a form still open once they are older than
 *   SIGNER_UPLOADS_UNUSED_HOURS (the clock moved 8 days on), and keeps every upload a value uses,
 *   also one whose value is being saved while it runs (it waits for the save's row locks).
 * Before this change every upload above was stored (all 200) and kept for ever.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { lockSubmissionAndSubmitter } from '../src/db/queries/signing-form.ts';
import { storageKeyFor } from '../src/documents/storage.ts';
import { acceptConsentViaApi, graphql, rest } from './helpers/app.ts';
import { setFileClockHours } from './helpers/clock.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { strokePng } from './helpers/images.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';
import { freePort, ROOT, type ServiceProcess, startService, testServiceEnv } from './helpers/processes.ts';

const MB = 1024 * 1024;
const MAX_FILES = 15;

let database: TestDatabase;
let db: Db;
let service: ServiceProcess;
let account: CreatedAccount;
let templateId: number;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-signer-uploads-'));
const dataDir = path.join(tmp, 'data');
const clockFile = path.join(tmp, 'clock');

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 2 });
  account = await createAccount(db, { name: 'Uploads Ltd', email: 'owner@signer-uploads.test' });
  setFileClockHours(clockFile, 0);
  const port = await freePort();
  service = await startService(
    {
      ...testServiceEnv({ databaseUrl: database.url, dataDir, port }),
      CLOCK_FILE: clockFile,
      SIGNER_UPLOADS_MAX_FILES: String(MAX_FILES),
      SIGNER_UPLOADS_SWEEP_SECONDS: '1',
    },
    90_000,
    ROOT,
    ['--import', 'tsx', path.join(ROOT, 'test', 'helpers', 'clock-service.ts')],
  );
  const template = await api('POST', '/templates/pdf', {
    name: 'Application',
    documents: [{ name: 'form', file: base64(await drawPdf([{ texts: [{ text: 'Application', x: 72, y: 40 }] }])) }],
    fields: [
      { name: 'Signature', type: 'signature', role: 'Applicant', areas: [{ x: 72, y: 72, w: 150, h: 40, page: 1 }] },
      {
        name: 'Proofs',
        type: 'file',
        role: 'Applicant',
        required: false,
        areas: [{ x: 72, y: 140, w: 150, h: 40, page: 1 }],
      },
    ],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  templateId = template.json.id;
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await db?.$disconnect();
  await database?.drop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const api = (method: string, route: string, body?: unknown) => rest(service.url, account.apiKey, method, route, body);

/** A new signer's slug and id (one submission each). */
async function newSigner(): Promise<{ id: number; slug: string }> {
  const created = await api('POST', '/submissions', {
    template_id: templateId,
    send_email: false,
    submitters: [{ role: 'Applicant', email: 'ann@signer-uploads.test' }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  return { id: created.json[0].id, slug: created.json[0].slug };
}

/** POST /api/attachments as the signing page sends it (multipart, no key). */
async function upload(slug: string, file: { bytes: Uint8Array; name: string; type: string }, kind = 'file') {
  const form = new FormData();
  form.append('submitter_slug', slug);
  form.append('type', kind);
  form.append('file', new Blob([new Uint8Array(file.bytes)], { type: file.type }), file.name);
  const response = await fetch(`${service.url}/api/attachments`, { method: 'POST', body: form });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

/** The signer's upload rows: how many, and their bytes together. */
async function storedUploads(submitterId: number): Promise<{ files: number; bytes: number }> {
  const rows = await db.storedFile.findMany({
    where: { submitterId },
    select: { byteSize: true },
  });
  return { files: rows.length, bytes: rows.reduce((sum, row) => sum + Number(row.byteSize), 0) };
}

/** Whether bytes are in the service's storage (local disk under DATA_DIR/files). */
const bytesStored = (bytes: Uint8Array) =>
  fs.existsSync(path.join(dataDir, 'files', storageKeyFor(createHash('sha256').update(bytes).digest('hex'))));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${service.output()}`);
    await sleep(100);
  }
}

describe('per-signer quota', () => {
  let signer: { id: number; slug: string };

  it('one slug’s 3 × 45 MB: the third is refused with the quota’s error, and nothing of it is stored', async () => {
    signer = await newSigner();
    const files = [0, 1, 2].map(() => randomBytes(45 * MB));
    const first = await upload(signer.slug, { bytes: files[0]!, name: 'scan-1.dat', type: 'application/octet-stream' });
    const second = await upload(signer.slug, {
      bytes: files[1]!,
      name: 'scan-2.dat',
      type: 'application/octet-stream',
    });
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await upload(signer.slug, { bytes: files[2]!, name: 'scan-3.dat', type: 'application/octet-stream' });
    expect(third).toEqual({
      status: 422,
      json: {
        error:
          'Upload limit reached: at most 100 MB of files per signer (SIGNER_UPLOADS_MAX_MB); 90 MB stored, ' +
          'this file 45 MB.',
      },
    });
    expect(await storedUploads(signer.id)).toEqual({ files: 2, bytes: 90 * MB });
    expect(files.map(bytesStored)).toEqual([true, true, false]);
  }, 60_000);

  it('20 uploads of that slug at once fill what is left and no more, and leave no refused bytes behind', async () => {
    const files = Array.from({ length: 20 }, () => randomBytes(MB));
    const answers = await Promise.all(
      files.map((bytes, i) => upload(signer.slug, { bytes, name: `photo-${i}.dat`, type: 'application/octet-stream' })),
    );
    // 90 MB stored + 10 × 1 MB = the 100 MB.
    expect(answers.filter((a) => a.status === 200)).toHaveLength(10);
    for (const refused of answers.filter((a) => a.status !== 200)) {
      expect(refused.status).toBe(422);
      expect(refused.json.error).toMatch(
        /^Upload limit reached: at most 100 MB of files per signer \(SIGNER_UPLOADS_MAX_MB\)/,
      );
      expect(refused.json.error).toMatch(/; \d+(\.\d)? MB stored, this file 1 MB\.$/);
    }
    expect(await storedUploads(signer.id)).toEqual({ files: 12, bytes: 100 * MB });
    // Exactly the accepted files' bytes are in storage.
    expect(files.map(bytesStored)).toEqual(answers.map((a) => a.status === 200));
  }, 30_000);

  it('20 uploads of one slug at once stay within the number of files', async () => {
    const other = await newSigner();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        upload(other.slug, { bytes: Buffer.from(`note ${i}\n`), name: `note-${i}.txt`, type: 'text/plain' }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(MAX_FILES);
    for (const refused of answers.filter((a) => a.status !== 200))
      expect(refused).toEqual({
        status: 422,
        json: { error: `Upload limit reached: at most ${MAX_FILES} files per signer (SIGNER_UPLOADS_MAX_FILES).` },
      });
    expect((await storedUploads(other.id)).files).toBe(MAX_FILES);
  }, 30_000);
});

describe('the type of an upload, by its bytes', () => {
  it('a claim the bytes belie is application/octet-stream; a program is refused; real types are kept', async () => {
    const signer = await newSigner();
    const html = Buffer.from('<html><body><script>alert(document.domain)</script></body></html>');
    const pdf = await drawPdf([{ texts: [{ text: 'A scan', x: 72, y: 72 }] }]);
    const cases: [string, { bytes: Uint8Array; name: string; type: string }, number, string | undefined][] = [
      [
        'a .png that is HTML, said to be a GIF',
        { bytes: html, name: 'photo.png', type: 'image/gif' },
        200,
        'application/octet-stream',
      ],
      [
        'a .png that is HTML, said to be text',
        { bytes: html, name: 'photo.png', type: 'text/plain' },
        200,
        'application/octet-stream',
      ],
      [
        'a .png that is HTML, said to be a PNG',
        { bytes: html, name: 'photo.png', type: 'image/png' },
        200,
        'application/octet-stream',
      ],
      [
        'a .pdf that is HTML',
        { bytes: html, name: 'scan.pdf', type: 'application/pdf' },
        200,
        'application/octet-stream',
      ],
      ['a .png that is a PDF', { bytes: pdf, name: 'photo.png', type: 'image/png' }, 200, 'application/pdf'],
      [
        'a real PNG with no claim',
        { bytes: await strokePng(80, 30), name: 'scan.dat', type: 'application/octet-stream' },
        200,
        'image/png',
      ],
      ['a text file', { bytes: Buffer.from('hello\n'), name: 'notes.txt', type: 'text/plain' }, 200, 'text/plain'],
    ];
    for (const [what, file, status, contentType] of cases) {
      const answer = await upload(signer.slug, file);
      expect(answer.status, what).toBe(status);
      expect(answer.json.content_type, what).toBe(contentType);
      const row = await db.storedFile.findUniqueOrThrow({ where: { uuid: answer.json.uuid } });
      expect(row.contentType, what).toBe(contentType);
    }
    // A Windows program named as a PNG: refused by its bytes, as its name would be.
    const program = Buffer.concat([
      Buffer.from('MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff', 'latin1'),
      randomBytes(64),
    ]);
    expect(await upload(signer.slug, { bytes: program, name: 'photo.png', type: 'image/png' })).toEqual({
      status: 422,
      json: { error: "File type '.exe' is not allowed." },
    });
    expect((await storedUploads(signer.id)).files).toBe(cases.length);
  });
});

const FORM_FIELDS = 'fields { uuid name }';
const signingForm = async (slug: string) =>
  (
    await graphql(service.url, `query F($slug: String!) { signingForm(slug: $slug) { ${FORM_FIELDS} } }`, {
      variables: { slug },
    })
  ).body.data.signingForm as { fields: { uuid: string; name: string }[] };

describe('the sweep of uploads no value uses', () => {
  it('removes them once the form is closed, or in an open form once they are old, and keeps those in use', async () => {
    const fieldUuids = Object.fromEntries(
      (await signingForm((await newSigner()).slug)).fields.map((f) => [f.name, f.uuid]),
    ) as Record<'Signature' | 'Proofs', string>;
    const png = async (width: number) => strokePng(width, 40);
    const file = (text: string) => ({
      bytes: Buffer.from(`${text} ${randomBytes(8).toString('hex')}\n`),
      type: 'text/plain',
    });
    const put = async (slug: string, what: { bytes: Uint8Array; type: string }, name: string, kind = 'file') => {
      const answer = await upload(slug, { ...what, name }, kind);
      expect(answer.status, JSON.stringify(answer.json)).toBe(200);
      return { uuid: answer.json.uuid as string, bytes: what.bytes };
    };
    const save = async (slug: string, values: Record<string, unknown>, mutation = 'saveSigningFormValues') => {
      await acceptConsentViaApi(service.url, slug);
      const { body } = await graphql(
        service.url,
        `mutation S($slug: String!, $values: JSON!) { ${mutation}(slug: $slug, values: $values) { slug } }`,
        { variables: { slug, values } },
      );
      expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    };

    // Open: a signature and a proof in use, a proof replaced (unused).
    const open = await newSigner();
    const openSignature = await put(
      open.slug,
      { bytes: await png(161), type: 'image/png' },
      'signature.png',
      'signature',
    );
    const openUsed = await put(open.slug, file('used proof'), 'used.txt');
    const openUnused = await put(open.slug, file('replaced proof'), 'replaced.txt');
    await save(open.slug, { [fieldUuids.Signature]: openSignature.uuid, [fieldUuids.Proofs]: [openUsed.uuid] });
    // Completed: its signature in use; a file uploaded and never used.
    const done = await newSigner();
    const doneSignature = await put(
      done.slug,
      { bytes: await png(162), type: 'image/png' },
      'signature.png',
      'signature',
    );
    const doneUnused = await put(done.slug, file('never used'), 'unused.txt');
    await save(done.slug, { [fieldUuids.Signature]: doneSignature.uuid }, 'completeSigningForm');
    // Declined: a signature drawn, never used.
    const declined = await newSigner();
    const declinedUnused = await put(declined.slug, { bytes: await png(163), type: 'image/png' }, 's.png', 'signature');
    const { body } = await graphql(
      service.url,
      'mutation D($slug: String!) { declineSigningForm(slug: $slug, reason: "No") { slug } }',
      { variables: { slug: declined.slug } },
    );
    expect(body.errors).toBeUndefined();

    const exists = async (upload: { uuid: string }) =>
      (await db.storedFile.count({ where: { uuid: upload.uuid } })) === 1;
    // Closed forms: their unused uploads go at the next sweep, rows then bytes.
    await until(async () => !(await exists(doneUnused)) && !(await exists(declinedUnused)), 'the closed forms’ sweep');
    await until(
      async () => !bytesStored(doneUnused.bytes) && !bytesStored(declinedUnused.bytes),
      'their bytes removed',
    );
    // The completed form's documents are made from its values: its signature is there, kept for good.
    await until(
      async () => (await db.completedDocument.count({ where: { submitterId: done.id, kind: 'document' } })) > 0,
      'the completed documents',
    );
    const settled = await db.storedFile.findUniqueOrThrow({ where: { uuid: doneSignature.uuid } });
    expect(settled.uploadSweepAt).toBeNull();
    expect(bytesStored(doneSignature.bytes)).toBe(true);
    // An open form's unused upload stays while it is young (seconds of sweeps have passed).
    for (const kept of [openSignature, openUsed, openUnused]) expect(await exists(kept), kept.uuid).toBe(true);

    // Eight days on (SIGNER_UPLOADS_UNUSED_HOURS is 168): the open form's unused upload goes.
    setFileClockHours(clockFile, 8 * 24);
    await until(async () => !(await exists(openUnused)), 'the open form’s old unused upload swept');
    await until(async () => !bytesStored(openUnused.bytes), 'its bytes removed');
    for (const kept of [openSignature, openUsed, doneSignature]) {
      expect(await exists(kept), kept.uuid).toBe(true);
      expect(bytesStored(kept.bytes), kept.uuid).toBe(true);
    }
    // In use in an open form: looked at again SIGNER_UPLOADS_UNUSED_HOURS after this sweep.
    const rechecked = await db.storedFile.findUniqueOrThrow({ where: { uuid: openUsed.uuid } });
    expect(rechecked.uploadSweepAt!.getTime()).toBeGreaterThan(Date.now() + 7 * 24 * 3_600_000);
  }, 150_000);

  it('keeps an old upload whose value is being saved while the sweep runs (the save’s row locks)', async () => {
    // The clock is 8 days on (the test above): every new upload of an open form is due at once.
    const signer = await newSigner();
    const proofs = (await signingForm(signer.slug)).fields.find((f) => f.name === 'Proofs')!.uuid;
    const named = await upload(signer.slug, { bytes: randomBytes(64), name: 'named.dat', type: 'text/plain' });
    const unnamed = await upload(signer.slug, { bytes: randomBytes(64), name: 'unnamed.dat', type: 'text/plain' });
    expect([named.status, unnamed.status]).toEqual([200, 200]);
    const { submissionId } = await db.submitter.findUniqueOrThrow({ where: { id: signer.id } });
    // A save as saveSigningFormValues makes it, held open for 3 s (sweeps run every second): its
    // row locks, then the value naming `named`.
    await db.$transaction(
      async (tx) => {
        await lockSubmissionAndSubmitter(tx, { submissionId, submitterId: signer.id });
        await tx.submitter.update({ where: { id: signer.id }, data: { values: { [proofs]: [named.json.uuid] } } });
        await sleep(3000);
      },
      { timeout: 20_000 },
    );
    const exists = async (uuid: string) => (await db.storedFile.count({ where: { uuid } })) === 1;
    await until(async () => !(await exists(unnamed.json.uuid)), 'the unnamed upload swept');
    expect(await exists(named.json.uuid)).toBe(true);
  }, 60_000);
});
