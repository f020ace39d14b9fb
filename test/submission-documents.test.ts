/**
 * GET /submissions/{id}/documents as DocuSeal answers it (Api::SubmissionDocumentsController,
 * reference §10.6) and the combined PDF (`combined_document_url`, §10.5), over REST and GraphQL:
 * before completion the documents as filled so far (values drawn, pdftotext; not signed, pdfsig),
 * kept per version of the values; `merge=true` one PDF with every page (pdfinfo); after completion
 * the signed documents, and the merged PDF signed; the combined PDF (documents + audit log,
 * signed) made on `include=combined_document_url` (GET and list) or by the completion when the
 * account's `combine_pdf_result` is on, its URL in GET, the list and the submission.completed
 * webhook. Answers are checked against DocuSeal's OpenAPI schemas.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { createLocalStorage } from '../src/documents/storage.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { pdfsigValidPades } from './helpers/pades-verifier.ts';
import { subscribeToEveryEvent } from './helpers/webhook-receiver.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
let templateId: number;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-submission-documents-'));

const api = (method: string, p: string, body?: unknown, key = alice.apiKey) => rest(t.url, key, method, p, body);
const gql = (query: string, variables?: Record<string, unknown>, key = alice.apiKey) =>
  graphql(t.url, query, { key, variables });

let downloads = 0;
async function download(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  downloads += 1;
  const file = path.join(tmp, `${downloads}.pdf`);
  fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));
  return file;
}
const text = (file: string) => execFileSync('pdftotext', [file, '-']).toString().replace(/\s+/g, ' ');
const pages = (file: string) => Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [file]).toString())![1]);
const pdfsig = (file: string) => {
  try {
    return execFileSync('pdfsig', [file], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  } catch (error) {
    const e = error as { stdout?: Buffer; stderr?: Buffer };
    return `${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
};
/** Signed (PAdES B-LT since issue 17: valid, and covering the whole revision it signed). */
const isSigned = (file: string) => pdfsigValidPades(fs.readFileSync(file));

/** A submission of the two-document template; the client completes through the API with its values. */
async function createSubmission(options: { managerCompleted?: boolean } = {}) {
  const created = await api('POST', '/submissions', {
    template_id: templateId,
    send_email: false,
    submitters: [
      {
        role: 'Client',
        email: 'client@documents.test',
        completed: true,
        values: { 'Client Name': 'Zephyrine Quillfeather', 'Client Signature': 'Z. Quill' },
      },
      {
        role: 'Manager',
        email: 'manager@documents.test',
        ...(options.managerCompleted ? { completed: true, values: { 'Manager Name': 'Bartholomew Oakes' } } : {}),
      },
    ],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
  const [client, manager] = created.json;
  return { id: client.submission_id as number, client, manager };
}

async function documentsOf(id: number, query = '') {
  const answer = await api('GET', `/submissions/${id}/documents${query}`);
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  expect(openApiErrors('get', '/submissions/{id}/documents', answer.json)).toEqual([]);
  expect(answer.json.id).toBe(id);
  return answer.json.documents as { name: string; url: string }[];
}

/** The service's storage (src/app.ts: local disk under DATA_DIR/files). */
const storage = () => createLocalStorage(path.join(t.config.dataDir, 'files'));

const keptRows = (submissionId: number, kind: string) =>
  t.db.completedDocument.findMany({ where: { submissionId, kind }, orderBy: { position: 'asc' } });

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Documents Ltd', email: 'alice@documents.test' });
  bob = await t.createAccount({ name: 'Other Ltd', email: 'bob@documents.test' });
  await subscribeToEveryEvent(t.db, alice.accountId);
  const { status, json } = await api('POST', '/templates/pdf', {
    name: 'Agreement',
    documents: [
      {
        name: 'contract',
        file: base64(fixturePdf('pdfjs-form_two_pages.pdf')),
        fields: [
          { name: 'Client Name', role: 'Client', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] },
          {
            name: 'Client Signature',
            type: 'signature',
            role: 'Client',
            areas: [{ x: 60, y: 120, w: 200, h: 40, page: 1 }],
          },
        ],
      },
      {
        name: 'annex',
        file: base64(fixturePdf('documenso-letter-size.pdf')),
        fields: [{ name: 'Manager Name', role: 'Manager', areas: [{ x: 72, y: 72, w: 220, h: 24, page: 1 }] }],
      },
    ],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  templateId = json.id;
}, 60_000);

afterAll(async () => {
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('GET /submissions/{id}/documents', () => {
  it('before completion: the documents as filled so far, unsigned, kept per version of the values', async () => {
    const { id, manager } = await createSubmission();
    const documents = await documentsOf(id);
    expect(documents.map((d) => d.name)).toEqual(['contract', 'annex']);
    const contract = await download(documents[0]!.url);
    expect(text(contract)).toContain('Zephyrine Quillfeather');
    // The typed signature is drawn as its image (src/documents/typed-signature.ts), not as text.
    expect(text(contract)).not.toContain('Z. Quill');
    expect(execFileSync('pdfimages', ['-list', contract]).toString()).toMatch(/\bimage\b/);
    expect(pages(contract)).toBe(2);
    expect(pdfsig(contract)).toContain('does not contain any signatures');
    const annex = await download(documents[1]!.url);
    expect(text(annex)).not.toContain('Bartholomew');
    // Asked again with the same values: the kept files, not drawn again.
    const kept = await keptRows(id, 'preview');
    expect(kept).toHaveLength(2);
    const keptKeys = (await t.db.storedFile.findMany({ where: { id: { in: kept.map((d) => d.fileId) } } })).map(
      (f) => f.storageKey,
    );
    for (const key of keptKeys) expect(await storage().exists(key)).toBe(true);
    await documentsOf(id);
    expect((await keptRows(id, 'preview')).map((d) => d.fileId)).toEqual(kept.map((d) => d.fileId));
    // GET /submissions/{id} keeps `documents: []` until completed (DocuSeal's serializer).
    expect((await api('GET', `/submissions/${id}`)).json.documents).toEqual([]);

    // merge=true: one PDF of every page, named after the template, unsigned.
    const [merged, ...more] = await documentsOf(id, '?merge=true');
    expect(more).toEqual([]);
    expect(merged!.name).toBe('Agreement');
    const mergedFile = await download(merged!.url);
    expect(pages(mergedFile)).toBe(3);
    expect(text(mergedFile)).toContain('Zephyrine Quillfeather');
    expect(pdfsig(mergedFile)).toContain('does not contain any signatures');
    // Only `merge=true` merges (DocuSeal compares the string).
    expect((await documentsOf(id, '?merge=1')).map((d) => d.name)).toEqual(['contract', 'annex']);

    // What the next party has entered so far is drawn too; new values make new files.
    const saved = await api('PUT', `/submitters/${manager.id}`, { values: { 'Manager Name': 'Draft Oakes' } });
    expect(saved.status, JSON.stringify(saved.json)).toBe(200);
    const redrawn = await documentsOf(id);
    expect(text(await download(redrawn[1]!.url))).toContain('Draft Oakes');
    const replaced = await keptRows(id, 'preview');
    expect(replaced).toHaveLength(2);
    expect(replaced.map((d) => d.fileId)).not.toEqual(kept.map((d) => d.fileId));
    // The replaced drafts are gone: rows at once, bytes after the commit (delete-unused-files).
    expect(await t.db.storedFile.count({ where: { id: { in: kept.map((d) => d.fileId) } } })).toBe(0);
    await t.outboxRelayed();
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    for (const key of keptKeys) expect(await storage().exists(key), key).toBe(false);
    // A draft is not a completed document for /tools/verify (the contract, with the client's values
    // only, is byte for byte the client's completed document, drawn by the same code).
    const verify = await api('POST', '/tools/verify', {
      file: base64(fs.readFileSync(await download(redrawn[1]!.url))),
    });
    expect(verify.json.checksum_status).toBe('not_found');

    // Another account's submission: 403, as every submission route.
    expect(await api('GET', `/submissions/${id}/documents`, undefined, bob.apiKey)).toEqual({
      status: 403,
      json: { error: 'Not authorized' },
    });
  });

  it('after completion: the signed documents; merge=true one signed PDF with every page', async () => {
    const { id, manager } = await createSubmission();
    await documentsOf(id); // documents as filled, kept
    await api('PUT', `/submitters/${manager.id}`, { completed: true, values: { 'Manager Name': 'Bartholomew Oakes' } });
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const submission = (await api('GET', `/submissions/${id}`)).json;
    expect(submission.status).toBe('completed');
    const documents = await documentsOf(id);
    expect(documents.map((d) => d.name)).toEqual(submission.documents.map((d: { name: string }) => d.name));
    const annex = await download(documents[1]!.url);
    expect(text(annex)).toContain('Bartholomew Oakes');
    expect(isSigned(annex)).toBe(true);

    const [merged, ...more] = await documentsOf(id, '?merge=true');
    expect(more).toEqual([]);
    expect(merged!.name).toBe('Agreement');
    const mergedFile = await download(merged!.url);
    expect(pages(mergedFile)).toBe(3);
    expect(text(mergedFile)).toContain('Zephyrine Quillfeather');
    expect(text(mergedFile)).toContain('Bartholomew Oakes');
    expect(isSigned(mergedFile)).toBe(true);
    // Kept: asked again, the same file.
    const kept = await keptRows(id, 'merged');
    expect(kept).toHaveLength(1);
    await documentsOf(id, '?merge=true');
    expect(await keptRows(id, 'merged')).toEqual(kept);
  });
});

describe('combined_document_url', () => {
  it('include=combined_document_url makes it on GET and in the list; otherwise null until made', async () => {
    const first = await createSubmission({ managerCompleted: true });
    const second = await createSubmission({ managerCompleted: true });
    const plain = (await api('GET', `/submissions/${first.id}`)).json;
    expect(plain.status).toBe('completed');
    expect(plain.combined_document_url).toBeNull();

    const withCombined = await api('GET', `/submissions/${first.id}?include=combined_document_url`);
    expect(openApiErrors('get', '/submissions/{id}', withCombined.json)).toEqual([]);
    const combined = await download(withCombined.json.combined_document_url);
    // The two documents' pages, then the audit log's.
    expect(pages(combined)).toBeGreaterThan(3);
    expect(text(combined)).toContain('Zephyrine Quillfeather');
    expect(text(combined)).toContain('Bartholomew Oakes');
    expect(text(combined)).toContain('Audit Log');
    expect(isSigned(combined)).toBe(true);
    // Once made, shown without asking (DocuSeal: the attachment exists).
    expect((await api('GET', `/submissions/${first.id}`)).json.combined_document_url).toContain('/file/');

    const item = async (query: string) => {
      const list = await api('GET', `/submissions?template_id=${templateId}${query}`);
      expect(list.status).toBe(200);
      expect(openApiErrors('get', '/submissions', list.json)).toEqual([]);
      return list.json.data.find((s: { id: number }) => s.id === second.id);
    };
    expect((await item('')).combined_document_url).toBeNull();
    const listed = await item('&include=combined_document_url');
    expect(listed.combined_document_url).toContain('/file/');
    expect(isSigned(await download(listed.combined_document_url))).toBe(true);
    expect((await item('')).combined_document_url).toContain('/file/');
  });

  it('the account setting makes the completion produce it: GET, list and submission.completed webhook', async () => {
    const set = await gql(
      'mutation { updateAccountPreferences(input: { combinePdfResult: true }) { id combinePdfResult } }',
    );
    expect(set.body).toEqual({ data: { updateAccountPreferences: { id: alice.accountId, combinePdfResult: true } } });
    try {
      const { id } = await createSubmission({ managerCompleted: true });
      const submission = (await api('GET', `/submissions/${id}`)).json;
      expect(submission.status).toBe('completed');
      expect(openApiErrors('get', '/submissions/{id}', submission)).toEqual([]);
      const combined = await download(submission.combined_document_url);
      expect(text(combined)).toContain('Audit Log');
      expect(isSigned(combined)).toBe(true);
      const list = (await api('GET', `/submissions?template_id=${templateId}`)).json;
      expect(list.data.find((s: { id: number }) => s.id === id).combined_document_url).toContain('/file/');

      await t.outboxRelayed();
      await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
      const delivery = await t.db.webhookDelivery.findFirstOrThrow({
        where: { accountId: alice.accountId, eventType: 'submission.completed', recordId: id },
      });
      const payload = delivery.payload as { data: { combined_document_url: string | null } };
      expect(payload.data.combined_document_url).toContain('/file/');
    } finally {
      await gql('mutation { updateAccountPreferences(input: { combinePdfResult: false }) { id } }');
    }
  });
});

describe('over GraphQL', () => {
  const DOCUMENTS = /* GraphQL */ `
    query ($id: Int!, $merge: Boolean) { submissionDocuments(id: $id, merge: $merge) { id documents { name url } } }
  `;

  it('submissionDocuments and combinedDocumentUrl(ensure: true) give what the REST routes give', async () => {
    const { id, manager } = await createSubmission();
    const before = await gql(DOCUMENTS, { id });
    expect(before.body.errors).toBeUndefined();
    const documents = before.body.data.submissionDocuments.documents;
    expect(documents.map((d: { name: string }) => d.name)).toEqual(['contract', 'annex']);
    const contract = await download(documents[0].url);
    expect(text(contract)).toContain('Zephyrine Quillfeather');
    expect(pdfsig(contract)).toContain('does not contain any signatures');
    const merged = (await gql(DOCUMENTS, { id, merge: true })).body.data.submissionDocuments.documents;
    expect(merged).toHaveLength(1);
    expect(pages(await download(merged[0].url))).toBe(3);

    const other = await gql(DOCUMENTS, { id }, bob.apiKey);
    expect(other.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    await api('PUT', `/submitters/${manager.id}`, { completed: true, values: { 'Manager Name': 'Bartholomew Oakes' } });
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const COMBINED =
      'query ($id: Int!) { submission(id: $id) { a: combinedDocumentUrl b: combinedDocumentUrl(ensure: true) } }';
    const combined = await gql(COMBINED, { id });
    expect(combined.body.errors).toBeUndefined();
    expect(combined.body.data.submission.a).toBeNull();
    const file = await download(combined.body.data.submission.b);
    expect(text(file)).toContain('Audit Log');
    expect(isSigned(file)).toBe(true);
    const after = await gql(DOCUMENTS, { id });
    expect(isSigned(await download(after.body.data.submissionDocuments.documents[0].url))).toBe(true);
  });
});
