/**
 * The certificate that digitally signs completed documents and audit logs (issue 5).
 *
 * Where it comes from, first match wins:
 * 1. SIGNING_P12_PATH / SIGNING_P12_PASSWORD: an operator-supplied PKCS#12 (for example one issued
 *    by a CA that Acrobat or the EU trusted lists know).
 * 2. The account's own default SigningCertificate row (account_id = the account; nothing creates
 *    these yet, an upload path can).
 * 3. The instance's generated default row (account_id NULL, is_default), created on first use.
 *
 * The generated certificate is a single self-signed end-entity certificate, not DocuSeal's
 * Root CA → Sub-CA → leaf chain (reference/docuseal-behaviour.md §10.3): a CA is only worth
 * having if its key is kept to issue further certificates, and keeping a CA key in the same
 * database as the leaf protects nothing. The self-signed certificate is itself the trust anchor a
 * verifier imports (its fingerprint can be published); rotating it means revoking the row (or
 * letting it expire), after which the next use generates a new one.
 */
import { generateKeyPair as generateKeyPairCallback, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import { promisify } from 'node:util';
import forge from 'node-forge';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import { lockGeneratedCertificate } from '../db/queries/advisory-locks.ts';
import { AppError } from '../errors.ts';

const generateKeyPair = promisify(generateKeyPairCallback);

/** What signPdf needs to sign, and what the signature shows. */
export interface SigningIdentity {
  /** DER PKCS#12 bundle: the private key (pkcs8ShroudedKeyBag) and its certificate (+ chain). */
  p12: Buffer;
  /** Passphrase of `p12`. */
  password: string;
  /** The signing (end-entity) certificate, PEM. */
  certificatePem: string;
  /** Signer name for the signature dictionary's /Name: the `signerName` asked for (the account name). */
  name: string;
}

/** Subject and issuer of the generated certificate. */
const GENERATED_SUBJECT = [
  { name: 'commonName', value: 'Signet' },
  { name: 'organizationName', value: 'Signet' },
];
const GENERATED_VALIDITY_YEARS = 10;
/** RFC 9336 id-kp-documentSigning. */
const OID_DOCUMENT_SIGNING = '1.3.6.1.5.5.7.3.36';

/**
 * The identity to sign an account's documents with (see the file comment for the order).
 * Reads the configured PKCS#12 on every call (so a replaced file is picked up without restart)
 * and checks it opens with the configured password and holds a key with its certificate.
 * Concurrent first uses without a configured file create one generated certificate: creation
 * runs under a transaction-scoped advisory lock and re-checks inside it.
 * @param deps.config `signingP12Path` (undefined: use the database) and `signingP12Password`
 * @param options.accountId the account whose documents are signed
 * @param options.signerName shown as the signature's /Name (and in its reason): the account name
 * @throws AppError UNAVAILABLE when the configured file cannot be read, is not PKCS#12, the
 *   password is wrong, it holds no private key or no certificate matching the key, or the
 *   certificate has expired; the message names SIGNING_P12_PATH and the cause
 */
export async function loadSigningIdentity(
  deps: { db: Db; config: Pick<Config, 'signingP12Path' | 'signingP12Password'> },
  options: { accountId: number; signerName: string },
): Promise<SigningIdentity> {
  const { signingP12Path, signingP12Password } = deps.config;
  if (signingP12Path) {
    const source = `SIGNING_P12_PATH (${signingP12Path})`;
    let p12: Buffer;
    try {
      p12 = await fs.readFile(signingP12Path);
    } catch (error) {
      throw new AppError('UNAVAILABLE', `Signing certificate: cannot read ${source}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const { certificate } = openPkcs12(p12, signingP12Password, source);
    if (certificate.validity.notAfter.getTime() <= Date.now()) {
      throw new AppError(
        'UNAVAILABLE',
        `Signing certificate: the certificate in ${source} expired on ${certificate.validity.notAfter.toISOString()}`,
      );
    }
    return {
      p12,
      password: signingP12Password,
      certificatePem: forge.pki.certificateToPem(certificate),
      name: options.signerName,
    };
  }

  const stored = await findUsableCertificate(deps.db, options.accountId);
  const row = stored ?? (await createGeneratedCertificate(deps.db));
  return {
    p12: row.p12,
    password: row.password,
    certificatePem: forge.pki.certificateToPem(row.certificate),
    name: options.signerName,
  };
}

interface UsableCertificate {
  p12: Buffer;
  password: string;
  certificate: forge.pki.Certificate;
}

/** The account's own default certificate, else the instance's; null when neither is usable. */
async function findUsableCertificate(
  db: Pick<Db, 'signingCertificate'>,
  accountId: number | null,
): Promise<UsableCertificate | null> {
  const rows = await db.signingCertificate.findMany({
    where: {
      isDefault: true,
      revokedAt: null,
      OR: [...(accountId === null ? [] : [{ accountId }]), { accountId: null }],
    },
    select: { id: true, p12: true, password: true },
    // The account's own row before the instance row; the newest first within each.
    orderBy: [{ accountId: { sort: 'asc', nulls: 'last' } }, { id: 'desc' }],
    take: 2,
  });
  for (const row of rows) {
    const p12 = Buffer.from(row.p12);
    const { certificate } = openPkcs12(p12, row.password, `signing certificate #${row.id}`);
    if (certificate.validity.notAfter.getTime() > Date.now()) return { p12, password: row.password, certificate };
  }
  return null;
}

/**
 * Creates the instance's generated certificate unless another caller did meanwhile. An expired
 * generated default is retired (is_default false, revoked_at set) and replaced.
 */
async function createGeneratedCertificate(db: Db): Promise<UsableCertificate> {
  // Key generation runs before the transaction: it is the slow part (~100 ms) and needs no lock;
  // a caller that loses the race throws its key away.
  const password = randomBytes(24).toString('base64url');
  const generated = await generateSelfSignedPkcs12(password, new Date());
  return db.$transaction(
    async (tx) => {
      await lockGeneratedCertificate(tx);
      const existing = await findUsableCertificate(tx, null);
      if (existing) return existing;
      await tx.signingCertificate.updateMany({
        where: { accountId: null, isDefault: true, revokedAt: null },
        data: { isDefault: false, revokedAt: new Date() },
      });
      await tx.signingCertificate.create({
        data: {
          accountId: null,
          name: 'Signet (generated)',
          p12: new Uint8Array(generated.p12),
          password,
          isDefault: true,
        },
        select: { id: true },
      });
      return { p12: generated.p12, password, certificate: generated.certificate };
    },
    { timeout: 30_000, maxWait: 30_000 },
  );
}

/**
 * A new RSA-2048 key and a self-signed SHA-256 certificate for it (CN=Signet, O=Signet, valid
 * from 5 minutes before `now` for 10 years; keyUsage digitalSignature + nonRepudiation, critical;
 * extKeyUsage emailProtection + RFC 9336 documentSigning; basicConstraints CA:false), bundled as
 * PKCS#12 (AES-256 key encryption, node-forge's SHA-1 HMAC integrity) under `password`.
 */
export async function generateSelfSignedPkcs12(
  password: string,
  now: Date,
): Promise<{ p12: Buffer; certificate: forge.pki.Certificate }> {
  // Node's native key generation: node-forge's pure-JS RSA generation takes seconds.
  const { privateKey, publicKey } = await generateKeyPair('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const key = forge.pki.privateKeyFromPem(privateKey);
  const certificate = forge.pki.createCertificate();
  certificate.publicKey = forge.pki.publicKeyFromPem(publicKey);
  // A positive 128-bit serial (RFC 5280 §4.1.2.2: at most 20 octets, non-negative).
  certificate.serialNumber = `01${randomBytes(15).toString('hex')}`;
  certificate.validity.notBefore = new Date(now.getTime() - 5 * 60_000);
  const notAfter = new Date(now);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + GENERATED_VALIDITY_YEARS);
  certificate.validity.notAfter = notAfter;
  certificate.setSubject(GENERATED_SUBJECT);
  certificate.setIssuer(GENERATED_SUBJECT);
  certificate.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, nonRepudiation: true, critical: true },
    { name: 'extKeyUsage', emailProtection: true, [OID_DOCUMENT_SIGNING]: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  certificate.sign(key, forge.md.sha256.create());
  const asn1 = forge.pkcs12.toPkcs12Asn1(key, [certificate], password, {
    algorithm: 'aes256',
    useMac: true,
    friendlyName: 'Signet',
  });
  return { p12: Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary'), certificate };
}

/** DER of each stored certificate row, by id: rows never change, and opening a bundle costs a key derivation. */
const storedCertificateDer = new Map<number, Buffer>();

/**
 * Every certificate this service has signed an account's documents with, as DER: the configured
 * SIGNING_P12_PATH certificate (when it opens), the account's stored certificates and the
 * instance's (retired and expired ones included: documents signed before a rotation stay
 * recognised). What `/tools/verify` calls trusted (DocuSeal's `Accounts.load_trusted_certs`).
 * A bundle that no longer opens is skipped, not an error: verification must not fail on it.
 */
export async function trustedCertificates(
  deps: { db: Db; config: Pick<Config, 'signingP12Path' | 'signingP12Password'> },
  accountId: number,
): Promise<Buffer[]> {
  const certificates: Buffer[] = [];
  const derOf = (certificate: forge.pki.Certificate) =>
    Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(certificate)).getBytes(), 'binary');
  const { signingP12Path, signingP12Password } = deps.config;
  if (signingP12Path) {
    try {
      const p12 = await fs.readFile(signingP12Path);
      certificates.push(derOf(openPkcs12(p12, signingP12Password, 'SIGNING_P12_PATH').certificate));
    } catch {
      // Unreadable now: the documents it signed are reported as signed by an external certificate.
    }
  }
  const rows = await deps.db.signingCertificate.findMany({
    where: { OR: [{ accountId }, { accountId: null }] },
    select: { id: true, p12: true, password: true },
    orderBy: { id: 'asc' },
  });
  for (const row of rows) {
    let der = storedCertificateDer.get(row.id);
    if (!der) {
      try {
        der = derOf(openPkcs12(Buffer.from(row.p12), row.password, `signing certificate #${row.id}`).certificate);
      } catch {
        continue;
      }
      storedCertificateDer.set(row.id, der);
    }
    certificates.push(der);
  }
  return certificates;
}

/**
 * Opens a PKCS#12 bundle the way @signpdf/signer-p12 will: the first pkcs8ShroudedKeyBag's key
 * and the certificate whose public key matches it.
 * @param source names the bundle in error messages
 * @throws AppError UNAVAILABLE (not PKCS#12, wrong password, no key, no matching certificate)
 */
function openPkcs12(p12: Buffer, password: string, source: string): { certificate: forge.pki.Certificate } {
  const fail = (reason: string, cause?: unknown): never => {
    throw new AppError('UNAVAILABLE', `Signing certificate: ${source} ${reason}`, { cause });
  };
  let asn1: forge.asn1.Asn1;
  try {
    asn1 = forge.asn1.fromDer(forge.util.createBuffer(p12.toString('binary')));
  } catch (error) {
    return fail('is not a PKCS#12 (.p12/.pfx) file', error);
  }
  let bundle: forge.pkcs12.Pkcs12Pfx;
  try {
    bundle = forge.pkcs12.pkcs12FromAsn1(asn1, false, password);
  } catch (error) {
    const message = (error as Error).message ?? '';
    // node-forge: "PKCS#12 MAC could not be verified. Invalid password?"; a wrong password on an
    // unMACed bundle fails later, decrypting the key ("Invalid password?" or a padding error).
    if (/password|MAC|decrypt|padding/i.test(message))
      return fail('does not open with the password in SIGNING_P12_PASSWORD (wrong password?)', error);
    return fail(`is not a PKCS#12 file node-forge can read: ${message}`, error);
  }
  const { key, certificate } = keyAndCertificateOf(bundle);
  if (!key) return fail('holds no encrypted private key (pkcs8ShroudedKeyBag) or an unsupported key type (RSA only)');
  if (!certificate) return fail('holds no certificate matching its private key');
  return { certificate };
}

/**
 * What a signer takes from an opened PKCS#12 bundle, as @signpdf/signer-p12 does: the first
 * pkcs8ShroudedKeyBag's RSA key, every certificate, and the one whose public key matches the key.
 * Shared by the configuration check above and the signer (sign-pdf.ts), so both accept the same
 * bundles; each words its own errors.
 */
export function keyAndCertificateOf(bundle: forge.pkcs12.Pkcs12Pfx): {
  key: forge.pki.rsa.PrivateKey | undefined;
  certificate: forge.pki.Certificate | undefined;
  certificates: forge.pki.Certificate[];
} {
  const key = bundle.getBags({ bagType: forge.pki.oids.pkcs8ShroudedKeyBag })[forge.pki.oids.pkcs8ShroudedKeyBag]?.[0]
    ?.key as forge.pki.rsa.PrivateKey | undefined;
  const certificates = (bundle.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag] ?? [])
    .map((bag) => bag.cert)
    .filter((cert): cert is forge.pki.Certificate => cert !== undefined);
  const certificate = key
    ? certificates.find((cert) => {
        const publicKey = cert.publicKey as forge.pki.rsa.PublicKey;
        return publicKey.n?.compareTo(key.n) === 0 && publicKey.e?.compareTo(key.e) === 0;
      })
    : undefined;
  return { key, certificate, certificates };
}
