/**
 * DocuSeal's tools (reference/docuseal-behaviour.md §1.2), over REST and GraphQL on a real server:
 * `POST /tools/verify` against a document this service completed, a copy with one byte flipped,
 * an unsigned PDF, a PDF signed with another key and the completed document with bytes appended;
 * `POST /tools/merge` checked with pdfinfo/pdftotext; DocuSeal's 422 bodies.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { generateSelfSignedPkcs12 } from '../src/signing/certificates.ts';
import { signPdf } from '../src/signing/sign-pdf.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
let completed: Buffer;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-tools-'));

/** How Signet's own timestamp authority names itself (src/signing/certificate-authority.ts). */
const OWN_TSA_UNIT = "Signet's own timestamp authority, not a qualified trust service";

const api = (account: CreatedAccount, method: string, p: string, body?: unknown) =>
  rest(t.url, account.apiKey, method, p, body);

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Alice Ltd', email: 'alice@tools.test' });
  bob = await t.createAccount({ name: 'Bob Ltd', email: 'bob@tools.test' });
  const template = await api(alice, 'POST', '/templates/pdf', {
    name: 'One page',
    documents: [{ name: 'doc', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields: [{ name: 'Name', role: 'Client', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] }],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  const created = await api(alice, 'POST', '/submissions', {
    template_id: template.json.id,
    send_email: false,
    submitters: [{ role: 'Client', email: 'client@tools.test', completed: true, values: { Name: 'Ada' } }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  await t.app.jobs.waitForIdle({ timeoutMs: 60_000 });
  const submission = (await api(alice, 'GET', `/submissions/${created.json[0].submission_id}`)).json;
  expect(submission.status).toBe('completed');
  completed = Buffer.from(await (await fetch(submission.documents[0].url)).arrayBuffer());
}, 120_000);
afterAll(async () => {
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('POST /tools/verify', () => {
  it(
    'reports a completed document as verified, valid, PAdES B-LT (timestamped by Signet’s own TSA, its DSS ' +
      'adding only validation data) and signed by this service, with its audit chain intact',
    async () => {
      const { status, json } = await api(alice, 'POST', '/tools/verify', { file: completed.toString('base64') });
      expect(status, JSON.stringify(json)).toBe(200);
      expect(json.checksum_status).toBe('verified');
      expect(json.signatures).toHaveLength(1);
      const [signature] = json.signatures;
      // Issue 17: ETSI.CAdES.detached, issued by the deployment's CA; the DSS revision comes after the
      // signature, so it no longer covers the file to its end (covers_whole_document false) but nothing
      // else was changed (changes_after_signing).
      expect(signature).toMatchObject({
        verification_result: [
          { type: 'info', content: 'Signature valid' },
          { type: 'info', content: 'Revisions after the signature add only validation data and document timestamps' },
        ],
        signer_name: 'Signet',
        signing_reason: 'Signed by Alice Ltd with Signet',
        signature_type: 'ETSI.CAdES.detached',
        valid: true,
        covers_whole_document: false,
        trusted: true,
        certificate: {
          subject: 'CN=Signet, O=Signet',
          issuer: "CN=Signet CA, O=Signet, OU=This deployment's own certificate authority",
        },
        pades_level: 'B-LT',
        timestamp: {
          authority: `CN=Signet Timestamp Authority, O=Signet, OU=${OWN_TSA_UNIT}`,
          valid: true,
        },
        revocation_data_embedded: true,
        changes_after_signing: 'validation_data',
      });
      expect(Date.parse(signature.signing_time)).toBeGreaterThan(Date.now() - 5 * 60_000);
      expect(Date.parse(signature.timestamp.time)).toBeGreaterThanOrEqual(Date.parse(signature.signing_time));
      expect(Date.parse(signature.certificates_valid_until)).toBeGreaterThan(Date.now() + 9 * 365 * 86_400_000);
      expect(signature.certificate.sha256_fingerprint).toMatch(/^[0-9a-f]{64}$/);
      expect(Object.keys(signature).slice(0, 5)).toEqual([
        'verification_result',
        'signer_name',
        'signing_reason',
        'signing_time',
        'signature_type',
      ]);
      expect(json.audit_trail).toMatchObject({ intact: true, problems: [], sealed: { in_chain: true } });
      expect(json.audit_trail.events).toBeGreaterThanOrEqual(json.audit_trail.sealed.events);
      expect(json.audit_trail.head).toMatch(/^[0-9a-f]{64}$/);
    },
  );

  it('another account: the checksum is not its document, the certificate not its trusted one', async () => {
    const { json } = await api(bob, 'POST', '/tools/verify', { file: completed.toString('base64') });
    expect(json.checksum_status).toBe('not_found');
    // Bob's documents are signed with the same instance certificate: it is trusted for him too.
    expect(json.signatures[0]).toMatchObject({ valid: true, trusted: true });
  });

  it('detects one flipped byte inside the signed range', async () => {
    const tampered = Buffer.from(completed);
    // A byte of the first signed range past the header: the file still parses, the digest differs.
    const at = Math.floor(completed.indexOf('/ByteRange') / 2);
    tampered[at] = tampered[at]! ^ 0x01;
    const { status, json } = await api(alice, 'POST', '/tools/verify', { file: tampered.toString('base64') });
    expect(status).toBe(200);
    expect(json.checksum_status).toBe('not_found');
    expect(json.signatures[0].valid).toBe(false);
    expect(json.signatures[0].verification_result).toContainEqual({
      type: 'error',
      content: 'Signature verification failed',
    });
  });

  it('says when bytes were appended after the signature', async () => {
    const appended = Buffer.concat([completed, Buffer.from('\n%%appended\n')]);
    const { json } = await api(alice, 'POST', '/tools/verify', { file: appended.toString('base64') });
    expect(json.signatures[0]).toMatchObject({
      valid: true,
      covers_whole_document: false,
      changes_after_signing: 'other',
      // Anything but validation data after it: no longer B-LT.
      pades_level: 'B-T',
    });
    expect(json.signatures[0].verification_result).toContainEqual({
      type: 'warning',
      content: 'The signature does not cover the whole document',
    });
  });

  it('an unsigned PDF has no signatures', async () => {
    const file = fixturePdf('pdfjs-tracemonkey.pdf');
    const { status, json } = await api(alice, 'POST', '/tools/verify', { file: base64(file) });
    expect(status).toBe(200);
    expect(json).toEqual({ checksum_status: 'not_found', signatures: [], audit_trail: null });
  });

  it('a PDF signed with another key: valid, but self-signed and not trusted', async () => {
    const other = await generateSelfSignedPkcs12('other', new Date());
    const signed = await signPdf(
      fixturePdf('docuseal-sample-document.pdf'),
      { p12: other.p12, password: 'other' },
      { name: 'Mallory' },
    );
    const { json } = await api(alice, 'POST', '/tools/verify', { file: signed.toString('base64') });
    expect(json.signatures[0]).toMatchObject({ valid: true, trusted: false, covers_whole_document: true });
    expect(json.signatures[0].verification_result).toEqual([
      { type: 'error', content: 'Self-signed certificate found' },
      { type: 'info', content: 'Signature valid' },
    ]);
  });

  it('malformed or missing files get DocuSeal-shaped 422s', async () => {
    const malformed = await api(alice, 'POST', '/tools/verify', {
      file: Buffer.from('%PDF-1.7 nothing').toString('base64'),
    });
    expect(malformed).toMatchObject({ status: 422, json: { error: 'Malformed PDF' } });
    const missing = await api(alice, 'POST', '/tools/verify', {});
    expect(missing.status).toBe(422);
    expect(missing.json.error).toMatch(/file/);
  });

  it('needs an API key', async () => {
    const response = await fetch(`${t.url}/api/tools/verify`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(401);
  });
});

describe('POST /tools/merge', () => {
  it('merges the pages in order and answers base64', async () => {
    const first = fixturePdf('docuseal-sample-document.pdf');
    const second = fixturePdf('pdfjs-form_two_pages.pdf');
    const { status, json } = await api(alice, 'POST', '/tools/merge', { files: [base64(first), base64(second)] });
    expect(status, JSON.stringify(json).slice(0, 300)).toBe(200);
    expect(Object.keys(json)).toEqual(['data']);
    const file = path.join(tmp, 'merged.pdf');
    fs.writeFileSync(file, Buffer.from(json.data, 'base64'));
    const pagesOf = (f: string) => Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [f]).toString())?.[1]);
    const firstFile = path.join(tmp, 'first.pdf');
    const secondFile = path.join(tmp, 'second.pdf');
    fs.writeFileSync(firstFile, first);
    fs.writeFileSync(secondFile, second);
    expect(pagesOf(file)).toBe(pagesOf(firstFile) + pagesOf(secondFile));
    const text = (f: string, page: number) =>
      execFileSync('pdftotext', ['-f', String(page), '-l', String(page), f, '-'])
        .toString()
        .trim();
    expect(text(file, 1)).toBe(text(firstFile, 1));
    expect(text(file, pagesOf(firstFile) + 1)).toBe(text(secondFile, 1));
  });

  it('answers DocuSeal’s 422s for no file, one file and a file that is not a PDF', async () => {
    expect(await api(alice, 'POST', '/tools/merge', {})).toMatchObject({
      status: 422,
      json: { error: 'Files are required' },
    });
    expect(
      await api(alice, 'POST', '/tools/merge', { files: [base64(fixturePdf('pdfjs-tracemonkey.pdf'))] }),
    ).toMatchObject({
      status: 422,
      json: { error: 'At least 2 files are required' },
    });
    const notPdf = await api(alice, 'POST', '/tools/merge', {
      files: [base64(fixturePdf('pdfjs-tracemonkey.pdf')), Buffer.from('hello').toString('base64')],
    });
    expect(notPdf.status).toBe(422);
    expect(notPdf.json.error).toMatch(/^files\[1\] is not a PDF/);
  });
});

describe('GraphQL', () => {
  it('verifyPdf and mergePdfs answer what the REST routes answer', async () => {
    const response = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': alice.apiKey },
      body: JSON.stringify({
        query: `query($file: String!, $files: [String!]!) {
          verifyPdf(file: $file) { checksumStatus signatures { valid trusted coversWholeDocument signerName } }
          mergePdfs(files: $files)
        }`,
        variables: {
          file: completed.toString('base64'),
          files: [completed.toString('base64'), base64(fixturePdf('docuseal-sample-document.pdf'))],
        },
      }),
    });
    const body = await response.json();
    expect(body.errors).toBeUndefined();
    expect(body.data.verifyPdf).toEqual({
      checksumStatus: 'verified',
      signatures: [{ valid: true, trusted: true, coversWholeDocument: false, signerName: 'Signet' }],
    });
    expect(Buffer.from(body.data.mergePdfs, 'base64').subarray(0, 5).toString()).toBe('%PDF-');
  });
});
