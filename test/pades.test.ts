/**
 * PAdES (issue 17) on a real service: documents completed through the REST API, checked by poppler's
 * `pdfsig`, by a second, independent verifier (Apache PDFBox + Bouncy Castle: test/helpers/
 * PadesVerifier.java, trusting only the deployment's CA and the test TSA's root, with no network: the
 * certificate paths and their revocation come from each document's DSS) and by OpenSSL (`ts -verify`
 * on the timestamp tokens, `crl -verify` on the CRL route).
 *
 * - Default (no TSA_URL): Signet's own timestamp authority → B-LT.
 * - TSA_URL set: a real RFC 3161 server on loopback (test/helpers/tsa-server.ts, PKI.js, its own
 *   root and CRL) → B-LTA (a document timestamp after the DSS).
 * - Tampering with the document, a timestamp or the DSS is detected; a revoked certificate is refused.
 */
import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { loadSigningIdentity } from '../src/signing/certificates.ts';
import { padesServices } from '../src/signing/pades-services.ts';
import { OID, parseAsn1 } from '../src/signing/pki.ts';
import { signPdf } from '../src/signing/sign-pdf.ts';
import { createRemoteTimestamper, TimestampError } from '../src/signing/timestamps.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import {
  type IndependentReport,
  openssl,
  pdfsig,
  pdfsigSignatures,
  pdfsigValidPades,
  scratchFile,
  signingConfig,
  verifyIndependently,
} from './helpers/pades-verifier.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { startTestTsa, type TestTsa } from './helpers/tsa-server.ts';

/** Signet's own TSA as Java names it (RFC 2253: the last RDN first). */
const OWN_TSA =
  "OU=Signet's own timestamp authority\\, not a qualified trust service,O=Signet,CN=Signet Timestamp Authority";

interface Completed {
  document: Buffer;
  auditLog: Buffer;
  startedAt: number;
  endedAt: number;
}

/** A one-party submission completed through the API, and its signed document and audit log. */
async function complete(t: TestApp, account: CreatedAccount): Promise<Completed> {
  const api = (method: string, p: string, body?: unknown) => rest(t.url, account.apiKey, method, p, body);
  const template = await api('POST', '/templates/pdf', {
    name: 'PAdES',
    documents: [{ name: 'doc', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields: [{ name: 'Name', role: 'Client', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] }],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  const startedAt = Date.now();
  const created = await api('POST', '/submissions', {
    template_id: template.json.id,
    send_email: false,
    submitters: [{ role: 'Client', email: 'client@pades.test', completed: true, values: { Name: 'Ada' } }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  await t.app.jobs.waitForIdle({ timeoutMs: 90_000 });
  const submission = (await api('GET', `/submissions/${created.json[0].submission_id}`)).json;
  expect(submission.status, JSON.stringify(submission.completion_error)).toBe('completed');
  const download = async (url: string) => Buffer.from(await (await fetch(url)).arrayBuffer());
  return {
    document: await download(submission.documents[0].url),
    auditLog: await download(submission.audit_log_url),
    startedAt,
    endedAt: Date.now(),
  };
}

/** The deployment's CA certificates (the anchors of the generated and own-TSA certificates). */
async function serviceCas(t: TestApp): Promise<Buffer[]> {
  const rows = await t.db.signingCertificate.findMany({ where: { kind: 'ca' }, select: { certificate: true } });
  return rows.map((r) => Buffer.from(r.certificate!));
}

/** The first signature's /ByteRange gap and CMS, and its signature timestamp token. */
function firstSignature(pdf: Buffer) {
  const [first, second, length] = /\/ByteRange \[0 (\d+) (\d+) (\d+)\]/
    .exec(pdf.toString('latin1'))!
    .slice(1)
    .map(Number) as [number, number, number];
  const contents = Buffer.from(pdf.subarray(first + 1, second - 1).toString('latin1'), 'hex');
  const signedData = new pkijs.SignedData({ schema: new pkijs.ContentInfo({ schema: parseAsn1(contents) }).content });
  const info = signedData.signerInfos[0]!;
  const token = info.unsignedAttrs?.attributes.find((a) => a.type === OID.signatureTimeStampToken)?.values[0];
  return {
    first,
    second,
    end: second + length,
    signatureValue: Buffer.from(info.signature.valueBlock.valueHexView),
    token: token ? Buffer.from(token.toBER(false)) : undefined,
  };
}

/** PEM of DER certificates, concatenated (OpenSSL's -CAfile). */
const pem = (ders: Buffer[]) =>
  ders
    .map(
      (der) =>
        `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE-----\n`,
    )
    .join('');

/** `openssl ts -verify` of a token over a SHA-256 digest, trusting `anchors`. */
function opensslVerifiesToken(token: Buffer, digest: Buffer, anchors: Buffer[]) {
  return openssl([
    'ts',
    '-verify',
    '-digest',
    digest.toString('hex'),
    '-in',
    scratchFile(token, 'tst'),
    '-token_in',
    '-CAfile',
    scratchFile(Buffer.from(pem(anchors)), 'pem'),
  ]);
}

/** A byte of `pdf` flipped at `at`. */
function flipped(pdf: Buffer, at: number): Buffer {
  const copy = Buffer.from(pdf);
  copy[at] = copy[at]! ^ 0x01;
  return copy;
}

/** The same hex digit of the /Contents string changed: a byte of the DER it encodes flips. */
function flippedHex(pdf: Buffer, at: number): Buffer {
  const copy = Buffer.from(pdf);
  const digit = String.fromCharCode(copy[at]!);
  copy[at] = (digit === '0' ? '1' : '0').charCodeAt(0);
  return copy;
}

/** The offset in `pdf` of the hex digits encoding `needle` inside the first signature's /Contents. */
function hexOffsetOf(pdf: Buffer, needle: Buffer): number {
  const { first, second } = firstSignature(pdf);
  const hex = pdf.subarray(first + 1, second - 1).toString('latin1');
  const at = hex.indexOf(needle.toString('hex'));
  expect(at).toBeGreaterThan(0);
  return first + 1 + at;
}

/** /tools/verify's answer for the account. */
async function toolsVerify(t: TestApp, account: CreatedAccount, pdf: Buffer) {
  const { status, json } = await rest(t.url, account.apiKey, 'POST', '/tools/verify', { file: pdf.toString('base64') });
  expect(status, JSON.stringify(json)).toBe(200);
  return json;
}

describe("default: Signet's own timestamp authority (PAdES B-LT)", () => {
  let t: TestApp;
  let account: CreatedAccount;
  let done: Completed;
  let anchors: Buffer[];
  let reports: IndependentReport[];
  let tamperedDocument: Buffer;
  let tamperedTimestamp: Buffer;
  let tamperedDss: Buffer;

  beforeAll(async () => {
    t = await startTestApp();
    account = await t.createAccount({ name: 'Own TSA Ltd', email: 'own-tsa@pades.test' });
    done = await complete(t, account);
    anchors = await serviceCas(t);
    expect(anchors).toHaveLength(1);
    const signature = firstSignature(done.document);
    // A byte of the page content (inside the first signed range).
    tamperedDocument = flipped(done.document, done.document.indexOf('stream') + 'stream'.length + 20);
    // A byte of the timestamp token's TSTInfo (its genTime), inside /Contents: not covered by the signature itself.
    const tstInfoTime = /\d{14}(\.\d+)?Z/.exec(signature.token!.toString('latin1'))!;
    tamperedTimestamp = flippedHex(
      done.document,
      hexOffsetOf(done.document, Buffer.from(tstInfoTime[0], 'latin1')) + 25,
    );
    // A byte of the CRL stream of the DSS (its signature value's last bytes).
    const crlStream = done.document.indexOf('stream', signature.end);
    const crls = done.document.lastIndexOf('endstream');
    expect(crls).toBeGreaterThan(crlStream);
    tamperedDss = flipped(done.document, crls - 10);
    reports = await verifyIndependently(
      [done.document, done.auditLog, tamperedDocument, tamperedTimestamp, tamperedDss],
      anchors,
    );
  }, 240_000);
  afterAll(async () => {
    await t?.close();
  });

  it('pdfsig: the document and the audit log carry a valid ETSI.CAdES.detached signature of their revision', () => {
    for (const pdf of [done.document, done.auditLog]) {
      const [signature, ...others] = pdfsigSignatures(pdfsig(pdf));
      expect(others).toEqual([]);
      expect(signature).toContain('Signature Type: ETSI.CAdES.detached');
      expect(signature).toContain('Signature is Valid.');
      expect(signature).toContain('Signing Hash Algorithm: SHA-256');
      expect(pdfsigValidPades(pdf)).toBe(true);
    }
  });

  it(
    'the independent verifier: CMS valid, ESS signing-certificate-v2 and no signingTime, a timestamp by ' +
      "Signet's own TSA over the signature value, both certificate paths valid to the CA with the DSS's CRLs",
    () => {
      for (const report of reports.slice(0, 2)) {
        expect(report.error).toBeUndefined();
        expect(report.dss).toMatchObject({ certs: 3, crls: 1, ocsps: 0, vri: 1, crlsValid: true });
        expect(report.signatures).toHaveLength(1);
        const [signature] = report.signatures;
        expect(signature).toMatchObject({
          subFilter: 'ETSI.CAdES.detached',
          coversToEnd: false,
          vri: true,
          cmsValid: true,
          signer: 'O=Signet,CN=Signet',
          signingCertificateV2: true,
          signingTimeAttribute: false,
          timestamp: { valid: true, imprintMatches: true, tsa: OWN_TSA, chain: { valid: true } },
          chain: { valid: true, length: 1 },
        });
        const genTime = Date.parse(signature!.timestamp!.genTime);
        expect(genTime).toBeGreaterThanOrEqual(done.startedAt - 1000);
        expect(genTime).toBeLessThanOrEqual(done.endedAt);
      }
    },
  );

  it('OpenSSL verifies the timestamp token: it imprints the SHA-256 of the signature value, the CA trusted', () => {
    const signature = firstSignature(done.document);
    const digest = createHash('sha256').update(signature.signatureValue).digest();
    const verified = opensslVerifiesToken(signature.token!, digest, anchors);
    expect(verified.output).toContain('Verification: OK');
    const other = opensslVerifiesToken(signature.token!, createHash('sha256').update('another').digest(), anchors);
    expect(other.output).toContain('Verification: FAILED');
  });

  it('/tools/verify: B-LT, timestamped, certificates valid for years, revocation data embedded', async () => {
    const json = await toolsVerify(t, account, done.document);
    expect(json.signatures[0]).toMatchObject({
      valid: true,
      pades_level: 'B-LT',
      timestamp: { valid: true },
      revocation_data_embedded: true,
      changes_after_signing: 'validation_data',
    });
    expect(json.signatures[0].timestamp.authority).toContain('CN=Signet Timestamp Authority');
  });

  it('tampering with the document is detected: pdfsig, the independent verifier and /tools/verify', async () => {
    expect(pdfsigSignatures(pdfsig(tamperedDocument))[0]).toContain('Signature Validation: Digest Mismatch.');
    expect(reports[2]!.signatures[0]).toMatchObject({ cmsValid: false });
    const json = await toolsVerify(t, account, tamperedDocument);
    expect(json.signatures[0]).toMatchObject({ valid: false, pades_level: null });
  });

  it('tampering with the timestamp is detected: the independent verifier, OpenSSL and /tools/verify', async () => {
    expect(reports[3]!.signatures[0]!.timestamp).toMatchObject({ valid: false });
    const signature = firstSignature(tamperedTimestamp);
    const digest = createHash('sha256').update(signature.signatureValue).digest();
    expect(opensslVerifiesToken(signature.token!, digest, anchors).output).toContain('Verification: FAILED');
    const json = await toolsVerify(t, account, tamperedTimestamp);
    expect(json.signatures[0]).toMatchObject({ valid: true, timestamp: { valid: false }, pades_level: 'B-B' });
    expect(json.signatures[0].verification_result).toContainEqual({
      type: 'error',
      content: expect.stringMatching(/^Signature timestamp does not verify/),
    });
  });

  it('tampering with the DSS (a byte of its CRL) is detected: the independent verifier and /tools/verify', async () => {
    expect(reports[4]!.dss).toMatchObject({ crlsValid: false });
    expect(reports[4]!.signatures[0]!.chain).toMatchObject({ valid: false });
    const json = await toolsVerify(t, account, tamperedDss);
    // The signature itself holds; its validation data does not: no longer B-LT.
    expect(json.signatures[0]).toMatchObject({ valid: true, revocation_data_embedded: false, pades_level: 'B-T' });
  });

  it('a revoked certificate: its CRL in the DSS lists it, and both verifiers refuse it', async () => {
    const config = t.config;
    const identity = await loadSigningIdentity({ db: t.db, config }, { accountId: account.accountId, signerName: 'x' });
    await t.db.signingCertificate.updateMany({
      where: { kind: 'signing', accountId: null, isDefault: true },
      data: { revokedAt: new Date() },
    });
    const signed = await signPdf(fixturePdf('documenso-letter-size.pdf'), identity, {
      name: 'Revoked',
      pades: padesServices({ db: t.db, config }),
    });
    const [report] = await verifyIndependently([signed], anchors);
    expect(report!.signatures[0]).toMatchObject({ cmsValid: true, chain: { valid: false } });
    const json = await toolsVerify(t, account, signed);
    expect(json.signatures[0].verification_result).toContainEqual({
      type: 'error',
      content: 'Certificate revoked: CN=Signet, O=Signet',
    });
    // The next completion signs with a new certificate.
    const next = await complete(t, account);
    const [fresh] = await verifyIndependently([next.document], anchors);
    expect(fresh!.signatures[0]).toMatchObject({ cmsValid: true, chain: { valid: true } });
  }, 240_000);

  it('GET /pki/crl/<ca>.crl: public, cacheable, a CRL signed by the CA (OpenSSL)', async () => {
    const [ca] = await t.db.signingCertificate.findMany({ where: { kind: 'ca' }, select: { id: true } });
    const response = await fetch(`${t.url}/pki/crl/${ca!.id}.crl`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/pkix-crl');
    expect(response.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    const crl = Buffer.from(await response.arrayBuffer());
    const checked = openssl([
      'crl',
      '-inform',
      'DER',
      '-in',
      scratchFile(crl, 'crl'),
      '-CAfile',
      scratchFile(Buffer.from(pem(anchors)), 'pem'),
      '-noout',
      '-text',
    ]);
    expect(checked.output).toContain('verify OK');
    expect(checked.output).toContain('Issuer: CN = Signet CA');
    // The revoked certificate of the test above is listed.
    expect(checked.output).toContain('Revoked Certificates:');
    // The same CRL for a while: the route does not sign on every request.
    expect(Buffer.from(await (await fetch(`${t.url}/pki/crl/${ca!.id}.crl`)).arrayBuffer()).equals(crl)).toBe(true);
    expect((await fetch(`${t.url}/pki/crl/999999.crl`)).status).toBe(404);
    expect((await fetch(`${t.url}/pki/crl/abc.crl`)).status).toBe(404);
  });
});

describe('TSA_URL: a configured timestamp authority on loopback (PAdES B-LTA)', () => {
  let tsa: TestTsa;
  let t: TestApp;
  let account: CreatedAccount;
  let done: Completed;
  let anchors: Buffer[];
  let reports: IndependentReport[];
  let tamperedDss: Buffer;

  beforeAll(async () => {
    tsa = await startTestTsa();
    // Its CRL is on loopback: downloads of private addresses are allowed for the test.
    t = await startTestApp({ env: { TSA_URL: tsa.url, DOWNLOAD_ALLOW_PRIVATE: 'true' } });
    account = await t.createAccount({ name: 'TSA Ltd', email: 'tsa@pades.test' });
    done = await complete(t, account);
    anchors = [...(await serviceCas(t)), tsa.root];
    // A byte of a DSS certificate stream (after the signature, before the document timestamp).
    const dssAt = done.document.indexOf('/Type /DSS');
    expect(dssAt).toBeGreaterThan(firstSignature(done.document).end);
    tamperedDss = flipped(done.document, done.document.indexOf('stream', firstSignature(done.document).end) + 40);
    reports = await verifyIndependently([done.document, done.auditLog, tamperedDss], anchors);
  }, 240_000);
  afterAll(async () => {
    await t?.close();
    await tsa?.close();
  });

  it('asks the TSA as RFC 3161 says: application/timestamp-query, SHA-256 imprints, a nonce, certReq', () => {
    // Two signatures (document, audit log), each with a signature and a document timestamp.
    expect(tsa.requests.length).toBeGreaterThanOrEqual(4);
    for (const request of tsa.requests) {
      expect(request).toMatchObject({ contentType: 'application/timestamp-query', certReq: true });
      expect(request.failure).toBeUndefined();
      expect(request.imprint).toMatch(/^[0-9a-f]{64}$/);
      expect(request.nonce).toMatch(/^[0-9a-f]{16}$/);
    }
    expect(new Set(tsa.requests.map((r) => r.nonce)).size).toBe(tsa.requests.length);
    const signature = firstSignature(done.document);
    const imprint = createHash('sha256').update(signature.signatureValue).digest('hex');
    expect(tsa.requests.map((r) => r.imprint)).toContain(imprint);
  });

  it('the test TSA checks requests: bad version, algorithm, imprint length, policy, extension refused', async () => {
    const request = (change: (r: pkijs.TimeStampReq) => void, contentType = 'application/timestamp-query') => {
      const r = new pkijs.TimeStampReq({
        version: 1,
        messageImprint: new pkijs.MessageImprint({
          hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256 }),
          hashedMessage: new asn1js.OctetString({ valueHex: new Uint8Array(32).buffer }),
        }),
        certReq: true,
      });
      change(r);
      return fetch(tsa.url, {
        method: 'POST',
        headers: { 'content-type': contentType },
        body: new Uint8Array(r.toSchema().toBER(false)),
      });
    };
    const before = tsa.requests.length;
    const answers = [
      await request((r) => (r.version = 2)),
      await request((r) => (r.messageImprint.hashAlgorithm = new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha1 }))),
      await request(
        (r) => (r.messageImprint.hashedMessage = new asn1js.OctetString({ valueHex: new ArrayBuffer(20) })),
      ),
      await request((r) => (r.reqPolicy = '1.2.3.4')),
      await request((r) => {
        r.extensions = [new pkijs.Extension({ extnID: '1.2.3.5', critical: false, extnValue: new ArrayBuffer(2) })];
      }),
      await request(() => undefined, 'application/octet-stream'),
    ];
    for (const answer of answers) expect(answer.status).toBe(200);
    expect(tsa.requests.slice(before).map((r) => r.failure)).toEqual([
      'badRequest',
      'badAlg',
      'badDataFormat',
      'unacceptedPolicy',
      'unacceptedExtension',
      'badRequest',
    ]);
    // What the service sent was never refused (the test above).
    expect(tsa.requests.slice(0, before).every((r) => r.failure === undefined)).toBe(true);
  });

  it(
    'pdfsig: the signature is valid; the document timestamp (ETSI.RFC3161) covers the whole file ' +
      '(poppler 22 does not validate document timestamps: the other verifiers do)',
    () => {
      for (const pdf of [done.document, done.auditLog]) {
        const [signature, timestamp, ...others] = pdfsigSignatures(pdfsig(pdf));
        expect(others).toEqual([]);
        expect(signature).toContain('Signature Type: ETSI.CAdES.detached');
        expect(signature).toContain('Signature is Valid.');
        expect(signature).toContain('Not total document signed');
        expect(timestamp).toContain('Signature Field Name: Signet document timestamp');
        expect(timestamp).toContain('Signer Certificate Common Name: Test TSA');
        expect(timestamp).toContain('Total document signed');
        expect(pdfsigValidPades(pdf)).toBe(true);
      }
    },
  );

  it(
    'the independent verifier: the signature timestamped by the TSA, the document timestamp valid over the ' +
      "whole file, every path valid with the DSS's CRLs (the TSA's downloaded from its distribution point)",
    () => {
      for (const report of reports.slice(0, 2)) {
        expect(report.error).toBeUndefined();
        // Signer + CA, TSA + its root; the deployment CA's CRL and the TSA root's.
        expect(report.dss).toMatchObject({ certs: 4, crls: 2, vri: 1, crlsValid: true });
        const [signature, timestamp] = report.signatures;
        expect(signature).toMatchObject({
          subFilter: 'ETSI.CAdES.detached',
          cmsValid: true,
          signingCertificateV2: true,
          signingTimeAttribute: false,
          vri: true,
          timestamp: { valid: true, imprintMatches: true, tsa: 'CN=Test TSA', chain: { valid: true } },
          chain: { valid: true },
        });
        expect(timestamp).toMatchObject({
          subFilter: 'ETSI.RFC3161',
          coversToEnd: true,
          timestamp: { valid: true, imprintMatches: true, tsa: 'CN=Test TSA', chain: { valid: true } },
        });
        expect(tsa.genTimes.map((d) => d.toISOString())).toContain(signature!.timestamp!.genTime);
        expect(Date.parse(timestamp!.timestamp!.genTime)).toBeGreaterThanOrEqual(
          Date.parse(signature!.timestamp!.genTime),
        );
      }
    },
  );

  it('OpenSSL verifies the document timestamp over the bytes it covers', () => {
    const pdf = done.document;
    const ranges = [...pdf.toString('latin1').matchAll(/\/ByteRange \[0 (\d+) (\d+) (\d+)\]/g)].map((m) =>
      m.slice(1).map(Number),
    );
    const [first, second, length] = ranges.find(([, second, length]) => second! + length! === pdf.length)!;
    const token = Buffer.from(pdf.subarray(first! + 1, second! - 1).toString('latin1'), 'hex');
    const covered = Buffer.concat([pdf.subarray(0, first), pdf.subarray(second, second! + length!)]);
    const digest = createHash('sha256').update(covered).digest();
    // The token's DER length: the zero padding after it is not the token.
    const der = token.subarray(0, 4 + token.readUInt16BE(2));
    expect(opensslVerifiesToken(der, digest, [tsa.root]).output).toContain('Verification: OK');
  });

  it('/tools/verify: the signature B-LTA, the document timestamp valid', async () => {
    const json = await toolsVerify(t, account, done.document);
    expect(json.signatures).toHaveLength(2);
    expect(json.signatures[0]).toMatchObject({
      valid: true,
      pades_level: 'B-LTA',
      timestamp: { valid: true, authority: 'CN=Test TSA' },
      revocation_data_embedded: true,
    });
    expect(json.signatures[1]).toMatchObject({
      signature_type: 'ETSI.RFC3161',
      valid: true,
      covers_whole_document: true,
      verification_result: [{ type: 'info', content: 'Timestamp valid' }],
    });
  });

  it('tampering with the DSS is detected by the document timestamp', async () => {
    expect(reports[2]!.signatures[1]!.timestamp).toMatchObject({ imprintMatches: false });
    const json = await toolsVerify(t, account, tamperedDss);
    expect(json.signatures[1]).toMatchObject({ signature_type: 'ETSI.RFC3161', valid: false });
    expect(json.signatures[0].pades_level).not.toBe('B-LTA');
  });

  it('a TSA that fails gives a TimestampError naming it and why', async () => {
    const stamp = (behaviour: TestTsa['behaviour'], timeoutMs = 2000) => {
      tsa.behaviour = behaviour;
      return createRemoteTimestamper({ url: tsa.url, timeoutMs, maxBytes: 64 * 1024, maxTokenBytes: 16 * 1024 })
        .stamp(createHash('sha256').update('x').digest())
        .finally(() => {
          tsa.behaviour = {};
        });
    };
    const cases: [TestTsa['behaviour'], RegExp][] = [
      [{ delayMs: 1500 }, /did not answer within 0\.5 s/],
      [{ httpStatus: 503 }, /answered HTTP 503/],
      [{ oversizeBytes: 70 * 1024 }, /answered more than 65536 bytes/],
      [{ wrongImprint: true }, /answered a token that does not check: the token imprints another digest/],
    ];
    for (const [behaviour, message] of cases) {
      const failure = stamp(behaviour, behaviour.delayMs ? 500 : 2000);
      await expect(failure).rejects.toBeInstanceOf(TimestampError);
      await expect(failure).rejects.toThrow(message);
      await expect(failure).rejects.toThrow(`the timestamp authority at ${tsa.url}`);
    }
    // A refusal (the TSA's PKIStatus rejection) is named with its failure bits.
    await expect(stamp({ refuse: 'unacceptedPolicy' })).rejects.toThrow(
      /refused the request \(status 2, unacceptedPolicy\)/,
    );
    const wrongPath = createRemoteTimestamper({
      url: tsa.url.replace('/tsa', '/no-such-path'),
      timeoutMs: 2000,
      maxBytes: 1024,
      maxTokenBytes: 1024,
    }).stamp(createHash('sha256').update('x').digest());
    await expect(wrongPath).rejects.toThrow(/answered HTTP 404/);
    // The timestamp config of the service is what the completion used.
    expect(signingConfig({ tsaUrl: tsa.url }).tsaUrl).toBe(t.config.tsaUrl);
  });
});
