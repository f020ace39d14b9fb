/**
 * The signing identity (configured PKCS#12, or the generated certificate issued by the deployment's
 * own CA and stored sealed) and digital signatures on real PDFs, checked with poppler's `pdfsig` and
 * OpenSSL. PAdES B-B here (no timestamp services passed); B-T/B-LT/B-LTA: test/pades.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import forge from 'node-forge';
import { PDFArray, PDFDict, PDFDocument, PDFName, type PDFString, type PDFHexString } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { generateSelfSignedPkcs12, loadSigningIdentity, type SigningIdentity } from '../src/signing/certificates.ts';
import type * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { OID, parseAsn1 } from '../src/signing/pki.ts';
import { unseal, unsealText } from '../src/signing/sealed-secrets.ts';
import { PadesSigner, signatureReason, signPdf } from '../src/signing/sign-pdf.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { openssl, scratchFile, signingConfig } from './helpers/pades-verifier.ts';
import { drawPdf, fixturePdf } from './helpers/pdfs.ts';

const NO_P12 = signingConfig();
const SIGNER = 'Ελένη Παπαδοπούλου (Acme) Иван';

let database: TestDatabase;
let db: Db;
let tmp: string;

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url);
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-sign-'));
});
afterAll(async () => {
  await db?.$disconnect();
  await database?.drop();
  if (tmp) await fs.rm(tmp, { recursive: true, force: true });
});

/** pdfsig's report on these bytes (poppler 22: "Signature is Valid.", "Total document signed"). */
async function pdfsig(bytes: Uint8Array): Promise<string> {
  const file = path.join(tmp, `${randomBytes(6).toString('hex')}.pdf`);
  await fs.writeFile(file, bytes);
  const result = spawnSync('pdfsig', [file], { encoding: 'utf8' });
  return result.stdout + result.stderr;
}

function certificateOf(identity: SigningIdentity): forge.pki.Certificate {
  return forge.pki.certificateFromPem(identity.certificatePem);
}

/** A PKCS#12 made with node-forge: a self-signed RSA certificate with this common name. */
function makeP12(commonName: string, password: string): Buffer {
  const keys = forge.pki.rsa.generateKeyPair({ bits: 1024, e: 0x10001 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '0a1b2c';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 365 * 86_400_000);
  const subject = [{ name: 'commonName', value: commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  const asn1 = forge.pkcs12.toPkcs12Asn1(keys.privateKey, [cert], password, { algorithm: '3des' });
  return Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');
}

/** The /V dictionaries of the signature fields, by field name. */
async function signatureDictionaries(bytes: Uint8Array): Promise<Map<string, PDFDict>> {
  const doc = await PDFDocument.load(bytes);
  const fields = doc.catalog.lookup(PDFName.of('AcroForm'), PDFDict).lookup(PDFName.of('Fields'), PDFArray);
  const found = new Map<string, PDFDict>();
  for (let i = 0; i < fields.size(); i++) {
    const field = fields.lookup(i, PDFDict);
    if (field.get(PDFName.of('FT')) !== PDFName.of('Sig')) continue;
    const title = field.get(PDFName.of('T')) as PDFString | PDFHexString;
    found.set(title.decodeText(), field.lookup(PDFName.of('V'), PDFDict));
  }
  return found;
}

function text(dict: PDFDict, key: string): string {
  return (dict.get(PDFName.of(key)) as PDFString | PDFHexString).decodeText();
}

describe('loadSigningIdentity', () => {
  it(
    'generates one certificate (and the CA that issues it) on concurrent first uses, stores them sealed, ' +
      'and returns it on later calls and after a restart',
    async () => {
      const identities = await Promise.all(
        [1, 2, 3, 4].map(() => loadSigningIdentity({ db, config: NO_P12 }, { accountId: 1, signerName: SIGNER })),
      );

      expect(new Set(identities.map((i) => i.certificatePem)).size).toBe(1);
      const rows = await db.signingCertificate.findMany({ orderBy: { id: 'asc' } });
      const leaves = rows.filter((r) => r.kind === 'signing');
      const cas = rows.filter((r) => r.kind === 'ca');
      expect(leaves).toHaveLength(1);
      expect(cas).toHaveLength(1);
      expect(leaves[0]).toMatchObject({ accountId: null, isDefault: true, revokedAt: null, sealed: true });
      expect(leaves[0].issuerId).toBe(cas[0].id);
      expect(identities[0]).toMatchObject({ name: SIGNER });
      // Sealed with the secret key: the stored bytes are neither the bundle nor its password.
      expect(Buffer.from(leaves[0].p12).equals(identities[0].p12)).toBe(false);
      expect(leaves[0].password).not.toBe(identities[0].password);
      const secret = NO_P12.secretKeyBase!;
      expect(unseal(secret, leaves[0].p12, 'leaf').equals(identities[0].p12)).toBe(true);
      expect(unsealText(secret, leaves[0].password, 'leaf')).toBe(identities[0].password);
      expect(identities[0].password.length).toBeGreaterThanOrEqual(32);
      expect(() => unseal('another-secret-key-base'.padEnd(64, 'y'), leaves[0].p12, 'leaf')).toThrow(
        /does not open with this deployment's SECRET_KEY_BASE/,
      );

      const cert = certificateOf(identities[0]);
      const ca = forge.pki.certificateFromAsn1(
        forge.asn1.fromDer(forge.util.createBuffer(Buffer.from(cas[0].certificate!).toString('binary'))),
      );
      expect(cert.subject.getField('CN').value).toBe('Signet');
      expect(cert.issuer.getField('CN').value).toBe('Signet CA');
      expect(ca.verify(cert)).toBe(true);
      expect(ca.verify(ca)).toBe(true);
      expect(ca.getExtension('basicConstraints')).toMatchObject({ cA: true });
      expect(cert.getExtension('keyUsage')).toMatchObject({
        digitalSignature: true,
        nonRepudiation: true,
        critical: true,
      });
      expect(cert.getExtension('basicConstraints')).toMatchObject({ cA: false });
      expect(cert.getExtension('cRLDistributionPoints')).toBeDefined();
      expect((cert.publicKey as forge.pki.rsa.PublicKey).n.bitLength()).toBe(2048);
      const years = (cert.validity.notAfter.getTime() - cert.validity.notBefore.getTime()) / (365.25 * 86_400_000);
      expect(years).toBeGreaterThan(9.99);
      expect(years).toBeLessThan(10.01);

      const again = await loadSigningIdentity({ db, config: NO_P12 }, { accountId: 2, signerName: 'Other' });
      expect(again.certificatePem).toBe(identities[0].certificatePem);
      expect(again.name).toBe('Other');

      const restarted = createDb(database.url);
      try {
        const after = await loadSigningIdentity(
          { db: restarted, config: NO_P12 },
          { accountId: 1, signerName: SIGNER },
        );
        expect(after.certificatePem).toBe(identities[0].certificatePem);
      } finally {
        await restarted.$disconnect();
      }
      expect(await db.signingCertificate.count()).toBe(2);
    },
  );

  it("prefers the account's own default certificate to the instance's", async () => {
    const { accountId } = await createAccount(db, { name: 'Own Cert', email: 'own-cert@example.test' });
    const own = await generateSelfSignedPkcs12('own-password', new Date());
    await db.signingCertificate.create({
      data: { accountId, name: 'Own', p12: new Uint8Array(own.p12), password: 'own-password', isDefault: true },
    });

    const identity = await loadSigningIdentity({ db, config: NO_P12 }, { accountId, signerName: 'Own Cert' });
    const other = await loadSigningIdentity({ db, config: NO_P12 }, { accountId: accountId + 1000, signerName: 'x' });

    expect(identity.certificatePem).toBe(forge.pki.certificateToPem(own.certificate));
    expect(identity.password).toBe('own-password');
    expect(other.certificatePem).not.toBe(identity.certificatePem);
    await db.signingCertificate.deleteMany({ where: { accountId } });
  });

  it(
    'replaces an expired generated certificate, keeping the old row revoked, and retires a self-signed one ' +
      'of before issue 17 without revoking it',
    async () => {
      for (const [issued, revoked] of [
        ['2000-01-01T00:00:00Z', true],
        [new Date().toISOString(), false],
      ] as const) {
        const fresh = await createTestDatabase();
        const freshDb = createDb(fresh.url);
        try {
          const old = await generateSelfSignedPkcs12('old-password', new Date(issued));
          const row = await freshDb.signingCertificate.create({
            data: {
              accountId: null,
              name: 'Old',
              p12: new Uint8Array(old.p12),
              password: 'old-password',
              isDefault: true,
            },
          });

          const identity = await loadSigningIdentity(
            { db: freshDb, config: NO_P12 },
            { accountId: 1, signerName: 'x' },
          );

          expect(identity.certificatePem).not.toBe(forge.pki.certificateToPem(old.certificate));
          expect(certificateOf(identity).issuer.getField('CN').value).toBe('Signet CA');
          expect(certificateOf(identity).validity.notAfter.getTime()).toBeGreaterThan(Date.now());
          const rows = await freshDb.signingCertificate.findMany({
            where: { kind: 'signing' },
            orderBy: { id: 'asc' },
          });
          expect(rows).toHaveLength(2);
          expect(rows[0]).toMatchObject({ id: row.id, isDefault: false });
          expect(rows[0].revokedAt instanceof Date).toBe(revoked);
          expect(rows[1]).toMatchObject({ isDefault: true, revokedAt: null });
        } finally {
          await freshDb.$disconnect();
          await fresh.drop();
        }
      }
    },
  );

  it('uses the PKCS#12 file from the configuration instead of the database', async () => {
    const file = path.join(tmp, 'configured.p12');
    await fs.writeFile(file, makeP12('Configured Signer', 'file-password'));
    const before = await db.signingCertificate.count();

    const identity = await loadSigningIdentity(
      { db, config: signingConfig({ signingP12Path: file, signingP12Password: 'file-password' }) },
      { accountId: 1, signerName: 'Acme' },
    );

    expect(certificateOf(identity).subject.getField('CN').value).toBe('Configured Signer');
    expect(identity).toMatchObject({ password: 'file-password', name: 'Acme' });
    expect(identity.p12.equals(await fs.readFile(file))).toBe(true);
    expect(await db.signingCertificate.count()).toBe(before);
    const report = await pdfsig(
      await signPdf(fixturePdf('documenso-letter-size.pdf'), identity, { name: identity.name }),
    );
    expect(report).toContain('Signer Certificate Common Name: Configured Signer');
    expect(report).toContain('Signature is Valid.');
  });

  it(
    'refuses a configured file with a wrong password, one that is not PKCS#12, and a missing one, ' +
      'with clear errors',
    async () => {
      const file = path.join(tmp, 'locked.p12');
      await fs.writeFile(file, makeP12('Locked', 'right'));
      const load = (signingP12Path: string, signingP12Password: string) =>
        loadSigningIdentity(
          { db, config: signingConfig({ signingP12Path, signingP12Password }) },
          { accountId: 1, signerName: 'x' },
        );

      await expect(load(file, 'wrong')).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        message:
          `Signing certificate: SIGNING_P12_PATH (${file}) does not open with the password in ` +
          `SIGNING_P12_PASSWORD (wrong password?)`,
      });
      const notP12 = path.join(tmp, 'not.p12');
      await fs.writeFile(notP12, '-----BEGIN CERTIFICATE-----\nnope\n');
      await expect(load(notP12, 'right')).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        message: `Signing certificate: SIGNING_P12_PATH (${notP12}) is not a PKCS#12 (.p12/.pfx) file`,
      });
      await expect(load(path.join(tmp, 'missing.p12'), 'right')).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        message: expect.stringMatching(/^Signing certificate: cannot read SIGNING_P12_PATH \(.*missing\.p12\): ENOENT/),
      });
    },
  );
});

describe('signPdf', () => {
  let identity: SigningIdentity;
  beforeAll(async () => {
    identity = await loadSigningIdentity({ db, config: NO_P12 }, { accountId: 1, signerName: SIGNER });
  });

  const fixtures = [
    'documenso-letter-size.pdf',
    'documenso-a4-size.pdf',
    'documenso-tabloid-landscape.pdf',
    'documenso-example.pdf',
    'docuseal-sample-document.pdf',
    // AcroForm, object streams and an xref stream.
    'pdfjs-form_two_pages.pdf',
    'pdfjs-hello_world_rotated.pdf',
    'pdfjs-tracemonkey.pdf',
  ];

  it.each(fixtures)('%s: pdfsig reports a valid signature over the whole document', async (name) => {
    const signed = await signPdf(fixturePdf(name), identity, { name: identity.name });
    const report = await pdfsig(signed);

    expect(report).toContain('Signature is Valid.');
    expect(report).toContain('Total document signed');
    expect(report).toContain('Signature Type: ETSI.CAdES.detached');
    expect(report).toContain('Signing Hash Algorithm: SHA-256');
    expect(report).toContain('Signer Certificate Common Name: Signet');
    expect(report).toContain('Signature Field Name: Signet signature');
    expect(report.match(/Signature #/g)).toHaveLength(1);
  });

  it(
    'makes a PAdES B-B CMS (ETSI EN 319 142-1): signing-certificate-v2 of the signer, no signingTime, ' +
      'attributes in DER order; OpenSSL verifies it over the signed ranges',
    async () => {
      for (const [p12, password] of [
        [identity.p12, identity.password],
        [makeP12('Other signer', 'secret'), 'secret'],
      ] as const) {
        const signed = await signPdf(fixturePdf('documenso-letter-size.pdf'), { p12, password }, { name: 'Acme' });
        const [first, second, secondLength] = /\/ByteRange \[0 (\d+) (\d+) (\d+)\]/
          .exec(signed.toString('latin1'))!
          .slice(1)
          .map(Number);
        const contents = Buffer.from(signed.subarray(first! + 1, second! - 1).toString('latin1'), 'hex');
        const signedData = new pkijs.SignedData({
          schema: new pkijs.ContentInfo({ schema: parseAsn1(contents) }).content,
        });
        const info = signedData.signerInfos[0]!;
        const types = info.signedAttrs!.attributes.map((a) => a.type);
        expect(types.sort()).toEqual([OID.contentType, OID.messageDigest, OID.signingCertificateV2].sort());
        expect(types).not.toContain(OID.signingTime);
        expect(info.unsignedAttrs).toBeUndefined();
        // The DER SET OF order: ascending encodings.
        const encoded = info.signedAttrs!.attributes.map((a) => Buffer.from(a.toSchema().toBER(false)));
        expect([...encoded].sort(Buffer.compare)).toEqual(encoded);
        // ESS signing-certificate-v2 names the signer: the SHA-256 of its DER.
        const signer = signedData.certificates![0] as pkijs.Certificate;
        const essCertId = info.signedAttrs!.attributes.find((a) => a.type === OID.signingCertificateV2)!.values[0]!;
        const certs = (essCertId as asn1js.Sequence).valueBlock.value[0] as asn1js.Sequence;
        const essCertIdV2 = certs.valueBlock.value[0] as asn1js.Sequence;
        const certHash = (essCertIdV2.valueBlock.value[0] as asn1js.OctetString).valueBlock.valueHexView;
        expect(Buffer.from(certHash).toString('hex')).toBe(
          createHash('sha256')
            .update(Buffer.from(signer.toSchema().toBER(false)))
            .digest('hex'),
        );
        // An independent check: OpenSSL's CMS verification (signature only; the chain is test/pades.test.ts's).
        const content = Buffer.concat([signed.subarray(0, first), signed.subarray(second, second! + secondLength!)]);
        const result = openssl([
          'cms',
          '-verify',
          '-inform',
          'DER',
          '-in',
          scratchFile(contents, 'p7s'),
          '-binary',
          '-content',
          scratchFile(content, 'bin'),
          '-noverify',
          '-out',
          '/dev/null',
        ]);
        expect(result.output).toContain('Verification successful');
        expect(result.code).toBe(0);
      }
      await expect(
        new PadesSigner({ p12: identity.p12, password: 'wrong password' }).sign(Buffer.from('x')),
      ).rejects.toThrow(/does not open/);
    },
  );

  it('signs a pdf-lib document saved with object streams and an xref stream', async () => {
    const source = await drawPdf([{ texts: [{ text: 'Drawn by pdf-lib', x: 72, y: 72 }] }, {}]);
    expect(Buffer.from(source).includes('/ObjStm')).toBe(true);
    expect(Buffer.from(source).includes('/Type /XRef')).toBe(true);

    const report = await pdfsig(await signPdf(source, identity, { name: 'Acme' }));

    expect(report).toContain('Signature is Valid.');
    expect(report).toContain('Total document signed');
  });

  it('writes the signer name, reason and time into the signature dictionary, in any script', async () => {
    const signingTime = new Date('2026-03-04T05:06:07Z');
    const signed = await signPdf(fixturePdf('documenso-letter-size.pdf'), identity, {
      name: identity.name,
      location: 'Zürich (HQ)',
      contactInfo: 'legal@example.test',
      signingTime,
    });

    const dict = (await signatureDictionaries(signed)).get('Signet signature')!;
    expect(text(dict, 'Name')).toBe(SIGNER);
    expect(text(dict, 'Reason')).toBe(`Signed by ${SIGNER} with Signet`);
    expect(text(dict, 'Reason')).toBe(signatureReason(SIGNER));
    expect(text(dict, 'Location')).toBe('Zürich (HQ)');
    expect(text(dict, 'ContactInfo')).toBe('legal@example.test');
    expect(text(dict, 'M')).toBe('D:20260304050607Z');
    expect(dict.get(PDFName.of('SubFilter'))).toBe(PDFName.of('ETSI.CAdES.detached'));
    const report = await pdfsig(signed);
    expect(report).toContain('Signing Time: Mar 04 2026 05:06:07');
    expect(report).toContain('Signature is Valid.');
  });

  it('reports a digest mismatch after one byte inside the signed range changes', async () => {
    const signed = await signPdf(fixturePdf('pdfjs-tracemonkey.pdf'), identity, { name: 'Acme' });
    const byteRange = /\/ByteRange \[(\d+) (\d+) (\d+) (\d+)\]/.exec(signed.toString('latin1'));
    expect(byteRange).not.toBeNull();
    const [start, length] = [Number(byteRange![1]), Number(byteRange![2])];
    expect(start).toBe(0);
    // A byte of the first page's compressed content stream: the structure stays intact, only
    // the digest changes.
    const stream = signed.indexOf('stream\n', 1000);
    expect(stream).toBeGreaterThan(0);
    expect(stream + 100).toBeLessThan(start + length);
    const tampered = Buffer.from(signed);
    tampered[stream + 100] ^= 0x01;

    const report = await pdfsig(tampered);

    expect(report).toContain('Signature Validation: Digest Mismatch.');
    expect(report).not.toContain('Signature is Valid.');
  });

  it('names a second signature field apart from the first', async () => {
    const once = await signPdf(fixturePdf('documenso-letter-size.pdf'), identity, { name: 'First' });
    const twice = await signPdf(once, identity, { name: 'Second' });

    const dicts = await signatureDictionaries(twice);
    expect([...dicts.keys()]).toEqual(['Signet signature', 'Signet signature 2']);
    expect(text(dicts.get('Signet signature 2')!, 'Name')).toBe('Second');
    // Re-saving rewrites the file, so only the new signature covers it.
    const report = await pdfsig(twice);
    expect(report).toMatch(/Signature #2:[\s\S]*Total document signed[\s\S]*Signature is Valid\./);
  });

  it('signs the 14-page tracemonkey PDF (timed)', async () => {
    const source = fixturePdf('pdfjs-tracemonkey.pdf');
    const times: number[] = [];
    let signed: Buffer | undefined;
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      signed = await signPdf(source, identity, { name: 'Acme' });
      times.push(performance.now() - started);
    }
    console.log(
      `signPdf pdfjs-tracemonkey.pdf (14 pages, ${(source.length / 1e6).toFixed(2)} MB): ` +
        times.map((t) => `${t.toFixed(0)} ms`).join(', '),
    );
    expect(await pdfsig(signed!)).toContain('Signature is Valid.');
  });
});
