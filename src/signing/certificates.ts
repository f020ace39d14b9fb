/**
 * The certificate that digitally signs completed documents and audit logs (issue 5; issue 17).
 *
 * Where it comes from, first match wins:
 * 1. SIGNING_P12_PATH / SIGNING_P12_PASSWORD: an operator-supplied PKCS#12 (for example one issued
 *    by a CA that Acrobat or the EU trusted lists know).
 * 2. The account's own certificate: its default `signing` row (the last uploaded; after a revoke,
 *    the newest remaining valid one), when not revoked and not expired, uploaded as a PKCS#12
 *    (account-certificates.ts) and stored sealed with SECRET_KEY_BASE.
 * 3. The instance's generated default row (account null, is_default), issued by the deployment's
 *    own CA (certificate-authority.ts) and created on first use. A generated default of an earlier
 *    version (self-signed, issuer_id null) is retired (is_default false, still trusted by
 *    /tools/verify) and replaced by a CA-issued one, so that every new signature has a chain with
 *    revocation data (PAdES B-LT).
 *
 * An expired account certificate is skipped (the service's signs instead, and the log says so);
 * one that expires within SIGNING_CERTIFICATE_WARNING_DAYS is announced in the log once a day
 * (expiry_warned_at), as the GraphQL type `SigningCertificate.expiryWarning` shows it.
 */
import { createHash, generateKeyPair as generateKeyPairCallback, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import { promisify } from 'node:util';
import forge from 'node-forge';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import { lockGeneratedCertificate } from '../db/queries/advisory-locks.ts';
import { AppError } from '../errors.ts';
import { openPkcs12Bundle } from './pkcs12.ts';

const generateKeyPair = promisify(generateKeyPairCallback);

/** What signing needs of the configuration. */
export type SigningConfig = Pick<
  Config,
  | 'signingP12Path'
  | 'signingP12Password'
  | 'appUrl'
  | 'secretKeyBase'
  | 'dataDir'
  | 'tsaUrl'
  | 'tsaTimeout'
  | 'signingCertificateWarningDays'
  | 'downloadAllowPrivate'
  | 'downloadTimeout'
>;

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

/**
 * The identity to sign an account's documents with (see the file comment for the order).
 * Reads the configured PKCS#12 on every call (so a replaced file is picked up without restart)
 * and checks it opens with the configured password and holds a key with its certificate.
 * Concurrent first uses without a configured file create one generated certificate (and the CA):
 * creation runs under a transaction-scoped advisory lock and re-checks inside it.
 * @param deps.config `signingP12Path` (undefined: use the database) and `signingP12Password`; the
 *   secret key that seals stored bundles; `signingCertificateWarningDays`
 * @param deps.logger where an expiring or expired account certificate is announced
 * @param options.accountId the account whose documents are signed
 * @param options.signerName shown as the signature's /Name (and in its reason): the account name
 * @throws AppError UNAVAILABLE when the configured file cannot be read, is not PKCS#12, the
 *   password is wrong, it holds no private key or no certificate matching the key, or the
 *   certificate has expired; the message names SIGNING_P12_PATH and the cause
 */
export async function loadSigningIdentity(
  deps: { db: Db; config: SigningConfig; logger?: Pick<Console, 'warn'> },
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
    const certificate = await openedCertificate(p12, signingP12Password, source);
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

  const own = await findAccountCertificate(deps, options.accountId);
  const row = own ?? (await findGeneratedCertificate(deps.db, deps.config)) ?? (await createGeneratedCertificate(deps));
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

type CertificateRow = {
  id: number;
  p12: Uint8Array;
  password: string;
  sealed: boolean;
  notAfter: Date | null;
  expiryWarnedAt: Date | null;
};

const ROW = { id: true, p12: true, password: true, sealed: true, notAfter: true, expiryWarnedAt: true } as const;

/**
 * Opened rows by id and the SHA-256 of their stored bundle: opening is a PBKDF2 in node-forge (tens
 * of milliseconds) on every completion otherwise; rows never change, and the digest keeps rows of two
 * databases apart.
 */
const openedRows = new Map<string, UsableCertificate>();

/** A row's bundle and password in the clear (unsealed with the secret key when sealed). */
async function openRow(config: SigningConfig, row: CertificateRow): Promise<UsableCertificate> {
  const cacheKey = `${row.id}:${createHash('sha256').update(row.p12).update(row.password).digest('hex')}`;
  const cached = openedRows.get(cacheKey);
  if (cached) return cached;
  const opened = await openRowUncached(config, row);
  if (openedRows.size >= 64) openedRows.clear();
  openedRows.set(cacheKey, opened);
  return opened;
}

async function openRowUncached(config: SigningConfig, row: CertificateRow): Promise<UsableCertificate> {
  let p12: Buffer = Buffer.from(row.p12);
  let password = row.password;
  if (row.sealed) {
    const [{ secretKeyOf }, { unseal, unsealText }] = await Promise.all([
      import('./certificate-authority.ts'),
      import('./sealed-secrets.ts'),
    ]);
    const secret = await secretKeyOf(config);
    p12 = unseal(secret, row.p12, `signing certificate #${row.id}`);
    password = unsealText(secret, row.password, `signing certificate #${row.id}`);
  }
  const certificate = await openedCertificate(p12, password, `signing certificate #${row.id}`);
  return { p12, password, certificate };
}

/**
 * The certificate of a PKCS#12 that opens with `password` (opened in the parse pool:
 * pkcs12.ts openPkcs12Bundle), as node-forge's object.
 * @throws AppError UNAVAILABLE as openPkcs12Bundle
 */
async function openedCertificate(p12: Buffer, password: string, source: string): Promise<forge.pki.Certificate> {
  const { certificate } = await openPkcs12Bundle(p12, password, source);
  return forge.pki.certificateFromAsn1(forge.asn1.fromDer(certificate.toString('binary')));
}

/**
 * The account's own default certificate when it is usable; an expired one is skipped and an
 * expiring one announced (see the file comment).
 */
async function findAccountCertificate(
  deps: { db: Db; config: SigningConfig; logger?: Pick<Console, 'warn'> },
  accountId: number,
): Promise<UsableCertificate | null> {
  const row = await deps.db.signingCertificate.findFirst({
    where: { accountId, kind: 'signing', isDefault: true, revokedAt: null },
    select: ROW,
    orderBy: { id: 'desc' },
  });
  if (!row) return null;
  const opened = await openRow(deps.config, row);
  const notAfter = opened.certificate.validity.notAfter;
  const now = Date.now();
  if (notAfter.getTime() <= now) {
    deps.logger?.warn(
      `Signing certificate #${row.id} of account ${accountId} expired on ${notAfter.toISOString()}: ` +
        "its documents are signed with the service's certificate until a new one is uploaded",
    );
    return null;
  }
  const warnFrom = notAfter.getTime() - deps.config.signingCertificateWarningDays * 86_400_000;
  const announcedToday = row.expiryWarnedAt && now - row.expiryWarnedAt.getTime() < 86_400_000;
  if (now >= warnFrom && !announcedToday) {
    // Once a day across instances: the row is claimed by the update that sees it unannounced.
    const claimed = await deps.db.signingCertificate.updateMany({
      where: { id: row.id, expiryWarnedAt: row.expiryWarnedAt },
      data: { expiryWarnedAt: new Date(now) },
    });
    if (claimed.count === 1)
      deps.logger?.warn(
        `Signing certificate #${row.id} of account ${accountId} expires on ${notAfter.toISOString()} ` +
          `(in ${Math.ceil((notAfter.getTime() - now) / 86_400_000)} days): upload its successor`,
      );
  }
  return opened;
}

/** The instance's generated default when usable: issued by the CA (issue 17) and not expired. */
async function findGeneratedCertificate(
  db: Pick<Db, 'signingCertificate'>,
  config: SigningConfig,
): Promise<UsableCertificate | null> {
  const row = await db.signingCertificate.findFirst({
    where: { accountId: null, kind: 'signing', isDefault: true, revokedAt: null, issuerId: { not: null } },
    select: ROW,
    orderBy: { id: 'desc' },
  });
  if (!row) return null;
  const opened = await openRow(config, row);
  return opened.certificate.validity.notAfter.getTime() > Date.now() ? opened : null;
}

/**
 * Creates the instance's generated certificate (and the CA when there is none) unless another
 * caller did meanwhile. An expired generated default is retired (is_default false, revoked_at
 * set); one of an earlier version (self-signed, no issuer) is retired without being revoked.
 */
async function createGeneratedCertificate(deps: { db: Db; config: SigningConfig }): Promise<UsableCertificate> {
  const { db, config } = deps;
  const ca = await import('./certificate-authority.ts');
  // Key generation runs before the transaction: it is the slow part (~0.1 s, ~1 s with a new CA)
  // and needs no lock; a caller that loses the race throws its keys away.
  const prepared = ca.prepareKeys(!(await ca.hasCa(db)));
  prepared.leaf.catch(() => undefined);
  return db.$transaction(
    async (tx) => {
      await lockGeneratedCertificate(tx);
      const existing = await findGeneratedCertificate(tx, config);
      if (existing) return existing;
      const now = new Date();
      const defaults = await tx.signingCertificate.findMany({
        where: { accountId: null, kind: 'signing', isDefault: true },
        select: ROW,
      });
      for (const row of defaults) {
        // Rows before issue 17 have no not_after column value: their certificate says.
        const notAfter = row.notAfter ?? (await openRow(config, row)).certificate.validity.notAfter;
        const expired = notAfter.getTime() <= now.getTime();
        await tx.signingCertificate.update({
          where: { id: row.id },
          data: { isDefault: false, ...(expired ? { revokedAt: now } : {}) },
        });
      }
      const created = await ca.createGeneratedSigningCertificate(tx, config, prepared);
      const certificate = await openedCertificate(created.p12, created.password, `signing certificate #${created.id}`);
      return { p12: created.p12, password: created.password, certificate };
    },
    { timeout: 30_000, maxWait: 30_000 },
  );
}

/**
 * A new RSA-2048 key and a self-signed SHA-256 certificate for it (CN=Signet, O=Signet, valid
 * from 5 minutes before `now` for 10 years; keyUsage digitalSignature + nonRepudiation, critical;
 * extKeyUsage emailProtection + RFC 9336 documentSigning; basicConstraints CA:false), bundled as
 * PKCS#12 (AES-256 key encryption, node-forge's SHA-1 HMAC integrity) under `password`. The
 * generated certificate of Signet before issue 17; now for tests and foreign signers (the service
 * issues its own from its CA).
 */
export async function generateSelfSignedPkcs12(
  password: string,
  now: Date,
  commonName = 'Signet',
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
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + 10);
  certificate.validity.notAfter = notAfter;
  const subject = [
    { name: 'commonName', value: commonName },
    { name: 'organizationName', value: 'Signet' },
  ];
  certificate.setSubject(subject);
  certificate.setIssuer(subject);
  certificate.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, nonRepudiation: true, critical: true },
    { name: 'extKeyUsage', emailProtection: true, '1.3.6.1.5.5.7.3.36': true },
    { name: 'subjectKeyIdentifier' },
  ]);
  certificate.sign(key, forge.md.sha256.create());
  const asn1 = forge.pkcs12.toPkcs12Asn1(key, [certificate], password, {
    algorithm: 'aes256',
    useMac: true,
    friendlyName: commonName,
  });
  return { p12: Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary'), certificate };
}

/**
 * DER of each stored certificate row without a `certificate` column value (before issue 17), by id
 * and the SHA-256 of its bundle: rows never change, opening a bundle costs a key derivation, and
 * the digest keeps rows of two databases apart.
 */
const storedCertificateDer = new Map<string, Buffer>();

/**
 * Every certificate this service has signed an account's documents with, as DER: the configured
 * SIGNING_P12_PATH certificate (when it opens), the account's stored signing certificates and the
 * instance's (retired and expired ones included: documents signed before a rotation stay
 * recognised). What `/tools/verify` calls trusted (DocuSeal's `Accounts.load_trusted_certs`).
 * A bundle that no longer opens is skipped, not an error: verification must not fail on it. Rows
 * since issue 17 keep their certificate in the clear, so no bundle is opened for them.
 */
export async function trustedCertificates(
  deps: { db: Db; config: SigningConfig },
  accountId: number,
): Promise<Buffer[]> {
  const certificates: Buffer[] = [];
  const { signingP12Path, signingP12Password } = deps.config;
  if (signingP12Path) {
    try {
      const p12 = await fs.readFile(signingP12Path);
      certificates.push((await openPkcs12Bundle(p12, signingP12Password, 'SIGNING_P12_PATH')).certificate);
    } catch {
      // Unreadable now: the documents it signed are reported as signed by an external certificate.
    }
  }
  const rows = await deps.db.signingCertificate.findMany({
    where: { kind: 'signing', OR: [{ accountId }, { accountId: null }] },
    select: { id: true, certificate: true, p12: true, password: true, sealed: true },
    orderBy: { id: 'asc' },
  });
  for (const row of rows) {
    if (row.certificate) {
      certificates.push(Buffer.from(row.certificate));
      continue;
    }
    const cacheKey = `${row.id}:${createHash('sha256').update(row.p12).digest('hex')}`;
    let der = storedCertificateDer.get(cacheKey);
    if (!der) {
      try {
        der = (await openPkcs12Bundle(Buffer.from(row.p12), row.password, `signing certificate #${row.id}`))
          .certificate;
      } catch {
        continue;
      }
      storedCertificateDer.set(cacheKey, der);
    }
    certificates.push(der);
  }
  return certificates;
}
