/**
 * An account's own signing certificate (issue 17) on a real service: uploaded as a PKCS#12 with its
 * password over GraphQL and with the CLI (a real `signet` process on the service's database and
 * DATA_DIR), stored sealed with the secret key, used for the account's completed documents (pdfsig,
 * /tools/verify, the independent verifier), refused when it cannot serve, warned about before it
 * expires (GraphQL, the log once a day), and revoked.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { secretKeyOf } from '../src/signing/certificate-authority.ts';
import { unseal, unsealText } from '../src/signing/sealed-secrets.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { DAY, makeP12 } from './helpers/certificates.ts';
import { pdfsig, pdfsigSignatures, verifyIndependently } from './helpers/pades-verifier.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { runSignet } from './helpers/processes.ts';

const VIEW = 'id name subject issuer notAfter inUse revokedAt expiryWarning sha256Fingerprint';

let t: TestApp;
let acme: CreatedAccount;
let other: CreatedAccount;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-own-certs-'));

beforeAll(async () => {
  t = await startTestApp();
  acme = await t.createAccount({ name: 'Acme Ltd', email: 'owner@acme-certs.test' });
  other = await t.createAccount({ name: 'Other Ltd', email: 'owner@other-certs.test' });
}, 60_000);
afterAll(async () => {
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function upload(account: CreatedAccount, input: { file: string; password: string; name?: string }) {
  const { body } = await graphql(
    t.url,
    `mutation ($input: UploadSigningCertificateInput!) { uploadSigningCertificate(input: $input) { ${VIEW} } }`,
    { key: account.apiKey, variables: { input } },
  );
  return body;
}

/** A completed one-party submission of the account; its signed document. */
async function completedDocument(account: CreatedAccount): Promise<Buffer> {
  const api = (method: string, p: string, body?: unknown) => rest(t.url, account.apiKey, method, p, body);
  const template = await api('POST', '/templates/pdf', {
    name: 'Own',
    documents: [{ name: 'doc', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [{ name: 'Name', role: 'Client', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] }],
  });
  const created = await api('POST', '/submissions', {
    template_id: template.json.id,
    send_email: false,
    submitters: [{ role: 'Client', email: 'client@own.test', completed: true, values: { Name: 'Ada' } }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  await t.app.jobs.waitForIdle({ timeoutMs: 90_000 });
  const submission = (await api('GET', `/submissions/${created.json[0].submission_id}`)).json;
  expect(submission.status, JSON.stringify(submission.completion_error)).toBe('completed');
  return Buffer.from(await (await fetch(submission.documents[0].url)).arrayBuffer());
}

const signerOf = (pdf: Buffer) => /Signer Certificate Common Name: (.*)/.exec(pdfsigSignatures(pdfsig(pdf))[0]!)?.[1];

describe('GraphQL', () => {
  let uploaded: { p12: Buffer; der: Buffer };

  it('uploadSigningCertificate stores the PKCS#12 sealed with the secret key, listed', async () => {
    uploaded = makeP12({ commonName: 'Acme Signing', password: 'pässword', toDays: 400 });
    const body = await upload(acme, { file: uploaded.p12.toString('base64'), password: 'pässword' });
    expect(body.errors).toBeUndefined();
    const view = body.data.uploadSigningCertificate;
    expect(view).toMatchObject({
      name: 'Acme Signing',
      subject: 'CN=Acme Signing, O=Acme',
      issuer: 'CN=Acme Signing, O=Acme',
      inUse: true,
      revokedAt: null,
      expiryWarning: null,
    });
    const row = await t.db.signingCertificate.findUniqueOrThrow({ where: { id: view.id } });
    expect(row).toMatchObject({ accountId: acme.accountId, kind: 'signing', sealed: true, isDefault: true });
    // Neither the bundle nor its password is stored as given; the deployment's secret key opens them.
    expect(Buffer.from(row.p12).includes(uploaded.p12.subarray(0, 64))).toBe(false);
    expect(row.password).not.toContain('pässword');
    const secret = await secretKeyOf(t.config);
    expect(unseal(secret, row.p12, 'row').equals(uploaded.p12)).toBe(true);
    expect(unsealText(secret, row.password, 'row')).toBe('pässword');
    expect(Buffer.from(row.certificate!).equals(uploaded.der)).toBe(true);

    const listed = await graphql(t.url, `{ signingCertificates { ${VIEW} } }`, { key: acme.apiKey });
    expect(listed.body.data.signingCertificates).toEqual([view]);
    const others = await graphql(t.url, `{ signingCertificates { ${VIEW} } }`, { key: other.apiKey });
    expect(others.body.data.signingCertificates).toEqual([]);
  });

  it("signs the account's documents with it; other accounts keep the service's", async () => {
    const document = await completedDocument(acme);
    expect(signerOf(document)).toBe('Acme Signing');
    expect(pdfsigSignatures(pdfsig(document))[0]).toContain('Signature is Valid.');
    const { json } = await rest(t.url, acme.apiKey, 'POST', '/tools/verify', { file: document.toString('base64') });
    expect(json.signatures[0]).toMatchObject({ valid: true, trusted: true, pades_level: 'B-LT' });
    expect(Date.parse(json.signatures[0].certificates_valid_until)).toBeLessThan(Date.now() + 401 * DAY);
    const cas = await t.db.signingCertificate.findMany({ where: { kind: 'ca' }, select: { certificate: true } });
    const [report] = await verifyIndependently([document], [uploaded.der, ...cas.map((c) => c.certificate!)]);
    expect(report!.signatures[0]).toMatchObject({
      cmsValid: true,
      signer: 'O=Acme,CN=Acme Signing',
      timestamp: { valid: true, imprintMatches: true },
      chain: { valid: true },
    });
    expect(signerOf(await completedDocument(other))).toBe('Signet');
  }, 180_000);

  it('refuses with a reason and stores nothing: bad password, not PKCS#12, expired, not valid yet', async () => {
    const before = await t.db.signingCertificate.count();
    const refused = async (input: { file: string; password: string }, message: RegExp | string) => {
      const body = await upload(acme, input);
      expect(body.errors?.[0]?.extensions?.code).toBe('VALIDATION');
      expect(body.errors?.[0]?.message).toMatch(message);
    };
    const good = makeP12({ commonName: 'Good', password: 'right', toDays: 100 });
    await refused(
      { file: good.p12.toString('base64'), password: 'wrong' },
      'the file does not open with the password given (wrong password?)',
    );
    await refused({ file: Buffer.from('not a bundle').toString('base64'), password: '' }, /is not a PKCS#12/);
    const expired = makeP12({ commonName: 'Old', password: 'p', fromDays: -400, toDays: -1 });
    await refused({ file: expired.p12.toString('base64'), password: 'p' }, /^The certificate expired on /);
    const future = makeP12({ commonName: 'Later', password: 'p', fromDays: 5, toDays: 400 });
    await refused({ file: future.p12.toString('base64'), password: 'p' }, /^The certificate is not valid before /);
    const encryptOnly = makeP12({ commonName: 'Enc', password: 'p', toDays: 400, keyUsage: { keyEncipherment: true } });
    await refused({ file: encryptOnly.p12.toString('base64'), password: 'p' }, /does not allow signing/);
    const tooLarge = Buffer.alloc(70 * 1024, 1).toString('base64');
    const body = await upload(acme, { file: tooLarge, password: '' });
    expect(body.errors?.[0]?.extensions?.code).toBe('VALIDATION');
    expect(await t.db.signingCertificate.count()).toBe(before);
  });

  it('warns before expiry: expiryWarning, and the log once a day when it signs', async () => {
    const soon = makeP12({ commonName: 'Acme Soon', password: 'p', toDays: 10 });
    const body = await upload(acme, { file: soon.p12.toString('base64'), password: 'p', name: 'Expiring' });
    const view = body.data.uploadSigningCertificate;
    expect(view.name).toBe('Expiring');
    expect(view.expiryWarning).toMatch(/^Expires on \d{4}-\d\d-\d\dT.*Z \(in 10 days\): upload its successor\.$/);
    const logged = () => t.logs.filter((l) => /Signing certificate #\d+ of account \d+ expires on/.test(String(l.msg)));
    expect(logged()).toHaveLength(0);
    expect(signerOf(await completedDocument(acme))).toBe('Acme Soon');
    expect(logged()).toHaveLength(1);
    expect(String(logged()[0]!.msg)).toContain(`Signing certificate #${view.id} of account ${acme.accountId}`);
    // Once a day: the second signature logs nothing more.
    await completedDocument(acme);
    expect(logged()).toHaveLength(1);
    const row = await t.db.signingCertificate.findUniqueOrThrow({ where: { id: view.id } });
    expect(row.expiryWarnedAt).toBeInstanceOf(Date);
  }, 180_000);

  it('revokeSigningCertificate: the previous valid one signs again; another account’s is FORBIDDEN', async () => {
    const [current] = (await graphql(t.url, `{ signingCertificates { ${VIEW} } }`, { key: acme.apiKey })).body.data
      .signingCertificates;
    const foreign = await graphql(t.url, `mutation { revokeSigningCertificate(id: ${current.id}) { id } }`, {
      key: other.apiKey,
    });
    expect(foreign.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const revoked = await graphql(t.url, `mutation { revokeSigningCertificate(id: ${current.id}) { ${VIEW} } }`, {
      key: acme.apiKey,
    });
    expect(revoked.body.data.revokeSigningCertificate).toMatchObject({ id: current.id, inUse: false });
    expect(revoked.body.data.revokeSigningCertificate.revokedAt).not.toBeNull();
    const listed = (await graphql(t.url, `{ signingCertificates { name inUse revokedAt } }`, { key: acme.apiKey })).body
      .data.signingCertificates;
    expect(listed.map((c: { name: string; inUse: boolean }) => [c.name, c.inUse])).toEqual([
      ['Expiring', false],
      ['Acme Signing', true],
    ]);
    expect(signerOf(await completedDocument(acme))).toBe('Acme Signing');
  }, 180_000);
});

describe('CLI', () => {
  const env = () => ({ DATABASE_URL: t.database.url, DATA_DIR: t.config.dataDir });

  it('certificate upload, list and revoke, with the password from a file; refusals exit 2', async () => {
    const bundle = makeP12({ commonName: 'Other Signing', password: 'from-file', toDays: 20 });
    const file = path.join(tmp, 'other.p12');
    fs.writeFileSync(file, bundle.p12);
    const passwordFile = path.join(tmp, 'password.txt');
    fs.writeFileSync(passwordFile, 'from-file\n');

    const wrong = await runSignet(
      ['certificate', 'upload', '--account-id', String(other.accountId), '--file', file, '--password', 'nope'],
      env(),
    );
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('does not open with the password given');

    const uploaded = await runSignet(
      [
        'certificate',
        'upload',
        '--account-id',
        String(other.accountId),
        '--file',
        file,
        '--password-file',
        passwordFile,
        '--name',
        'From the CLI',
      ],
      env(),
    );
    expect(uploaded.code, uploaded.stderr).toBe(0);
    const view = JSON.parse(uploaded.stdout.trim());
    expect(view).toMatchObject({ name: 'From the CLI', subject: 'CN=Other Signing, O=Acme', inUse: true });
    expect(view.expiryWarning).toMatch(/\(in 20 days\)/);
    // The service opens what the CLI sealed (the same DATA_DIR secret).
    expect(signerOf(await completedDocument(other))).toBe('Other Signing');

    const listed = await runSignet(['certificate', 'list', '--account-id', String(other.accountId)], env());
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout.trim()).map((c: { id: number }) => c.id)).toEqual([view.id]);

    const revoked = await runSignet(
      ['certificate', 'revoke', '--account-id', String(other.accountId), '--id', String(view.id)],
      env(),
    );
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout.trim())).toMatchObject({ id: view.id, inUse: false });
    // Another account's certificate: refused as every record of another account (FORBIDDEN).
    const foreign = await runSignet(
      ['certificate', 'revoke', '--account-id', '999999', '--id', String(view.id)],
      env(),
    );
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toContain('Not authorized');
    const missing = await runSignet(['certificate', 'revoke', '--account-id', '999999', '--id', '999999'], env());
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('Signing certificate 999999 not found');
  }, 180_000);
});
