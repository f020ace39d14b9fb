/**
 * The completion pipeline through the API path (`completed: true`): each party's values drawn on
 * top of the previous party's, the final documents and the audit log signed (pdfsig), the audit
 * log's hashes matching the files, documents and audit_log_url in the responses, and running the
 * pipeline again changing nothing.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { completeSubmission } from '../src/signing/complete-submission.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let templateId: number;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-completion-'));

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);

async function download(url: string, name: string): Promise<{ file: string; bytes: Buffer }> {
  const bytes = Buffer.from(await (await fetch(url)).arrayBuffer());
  const file = path.join(tmp, name);
  fs.writeFileSync(file, bytes);
  return { file, bytes };
}

const pdftotext = (file: string, page?: number) =>
  execFileSync('pdftotext', [...(page ? ['-f', String(page), '-l', String(page)] : []), file, '-']).toString();
const pdfsig = (file: string) => {
  try {
    return execFileSync('pdfsig', [file]).toString();
  } catch (error) {
    return String((error as { stdout?: Buffer }).stdout ?? error);
  }
};

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Ακμή Ltd', email: 'alice@completion.test' });
  const { json } = await api('POST', '/templates/pdf', {
    name: 'Two-page form',
    documents: [{ name: 'form', file: base64(fixturePdf('pdfjs-form_two_pages.pdf')) }],
    fields: [
      { name: 'Client Name', role: 'Client', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] },
      { name: 'Client Signature', type: 'signature', role: 'Client', areas: [{ x: 60, y: 120, w: 200, h: 40, page: 1 }] },
      { name: 'Manager Name', role: 'Manager', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 2 }] },
    ],
  });
  templateId = json.id;
});
afterAll(async () => {
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('completion through the API', () => {
  it('draws every party’s values, signs the final documents and the audit log', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        { role: 'Client', email: 'client@example.test', name: 'Ελένη Παπαδοπούλου', completed: true, values: { 'Client Name': 'Ελένη Παπαδοπούλου', 'Client Signature': 'Eleni P' } },
        { role: 'Manager', email: 'manager@example.test', name: 'Анна Иванова' },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const [client, manager] = created.json;
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    // The first party's documents exist; the submission is not complete yet.
    const partial = (await api('GET', `/submissions/${client.submission_id}`)).json;
    expect(partial.status).toBe('pending');
    expect(partial.submitters[0].documents).toHaveLength(1);
    expect(partial.audit_log_url).toBeNull();

    await api('PUT', `/submitters/${manager.id}`, { completed: true, values: { 'Manager Name': 'Анна Иванова' } });
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const done = (await api('GET', `/submissions/${client.submission_id}`)).json;
    expect(done.status).toBe('completed');
    expect(done.completed_at).toMatch(/Z$/);
    expect(done.documents).toEqual([{ name: 'form', url: expect.stringContaining('/file/') }]);
    expect(done.audit_log_url).toEqual(expect.stringContaining('/file/'));

    const final = await download(done.documents[0].url, 'final.pdf');
    expect(pdftotext(final.file, 1)).toContain('Ελένη Παπαδοπούλου');
    expect(pdftotext(final.file, 1)).toContain('Eleni P');
    expect(pdftotext(final.file, 2)).toContain('Анна Иванова');
    const signature = pdfsig(final.file);
    expect(signature).toContain('Signature is Valid');
    expect(signature).toContain('Total document signed');

    // One byte changed inside the signed range: the signature no longer verifies.
    const tampered = Buffer.from(final.bytes);
    const range = /\/ByteRange\s*\[\s*(\d+)\s+(\d+)/.exec(tampered.toString('latin1'));
    const firstRangeEnd = Number(range![2]);
    // Inside the first stream of the first signed range: the file still parses, the digest changes.
    const at = tampered.indexOf('stream') + 'stream'.length + 20;
    expect(at).toBeLessThan(firstRangeEnd);
    tampered[at] = tampered[at]! ^ 0x01;
    const tamperedFile = path.join(tmp, 'tampered.pdf');
    fs.writeFileSync(tamperedFile, tampered);
    const verdict = pdfsig(tamperedFile);
    expect(verdict).not.toContain('Signature is Valid');
    expect(verdict).toMatch(/Digest Mismatch|Invalid/i);

    const log = await download(done.audit_log_url, 'audit.pdf');
    expect(pdfsig(log.file)).toContain('Signature is Valid');
    const logText = pdftotext(log.file).replace(/\s+/g, ' ');
    expect(logText).toContain(String(client.submission_id));
    expect(logText).toContain('Анна Иванова');
    const finalHash = createHash('sha256').update(final.bytes).digest('hex');
    expect(logText.replace(/\s/g, '')).toContain(finalHash);
  });

  it('running the pipeline again produces nothing new', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        { role: 'Client', email: 'c2@example.test', completed: true, values: { 'Client Name': 'Once' } },
        { role: 'Manager', email: 'm2@example.test', completed: true },
      ],
    });
    const submissionId = created.json[0].submission_id;
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const before = await t.db.completedDocument.findMany({ where: { submissionId } });
    expect(before.map((d) => d.kind).sort()).toEqual(['audit_log', 'document', 'document']);
    await completeSubmission({ db: t.db, storage: t.app.files.storage, config: t.config }, submissionId);
    await completeSubmission({ db: t.db, storage: t.app.files.storage, config: t.config }, submissionId);
    expect(await t.db.completedDocument.count({ where: { submissionId } })).toBe(before.length);
  });
});
