/**
 * Signet's own certificate authority and timestamp authority (issue 17), for deployments that sign
 * with the service's generated certificate (no SIGNING_P12_PATH, no account certificate).
 *
 * One CA per deployment ("Signet CA", RSA-3072, 20 years), generated on first use and stored as a
 * `signing_certificates` row of kind `ca`, its bundle sealed with SECRET_KEY_BASE. It issues:
 * - the generated signing certificate ("Signet", RSA-2048, 10 years; kind `signing`), and
 * - the certificate of Signet's own timestamp authority ("Signet Timestamp Authority", RSA-3072,
 *   10 years, extKeyUsage id-kp-timeStamping critical as RFC 3161 §2.3 requires; kind `tsa`),
 * each naming the CA's CRL (cRLDistributionPoints): `{APP_URL}/pki/crl/<ca id>.crl`, served by
 * pki-routes.ts and embedded in every signed document's DSS (long-term-validation.ts).
 *
 * Why a CA now, where issue 5 kept one self-signed certificate: a long-term signature (PAdES B-LT)
 * carries revocation data for every certificate that is not a trust anchor. With one CA the anchor
 * a verifier imports is the CA (its SHA-256 fingerprint is what to publish), and both the signing
 * and the timestamp certificates get a CRL that says they are not revoked. Keeping the CA key next
 * to the leaves protects nothing against a stolen database (the keys are sealed with the secret
 * key for that); it gives revocation: a retired certificate (revoked_at) appears on the CRL.
 *
 * Creation runs under the generated-certificate advisory lock (src/db/queries/advisory-locks.ts), so
 * instances starting together make one CA and one TSA.
 */
import { createHash, generateKeyPair as generateKeyPairCallback, randomBytes, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import forge from 'node-forge';
import type * as pkijs from 'pkijs';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import { lockGeneratedCertificate } from '../db/queries/advisory-locks.ts';
import { resolveSecretKeyBase } from '../documents/secret-key.ts';
import { openPkcs12Bundle } from './pkcs12.ts';
import {
  buildCrl,
  type CertificateRequest,
  issueCertificate,
  KEY_USAGE,
  OID,
  parseCertificate,
  serialOf,
} from './pki.ts';
import { seal, sealText, unseal, unsealText } from './sealed-secrets.ts';
import type { TimestampAuthorityKey } from './timestamps.ts';

const generateKeyPair = promisify(generateKeyPairCallback);

/** What the CA module needs of the configuration. */
export type AuthorityConfig = Pick<Config, 'appUrl' | 'secretKeyBase' | 'dataDir'>;

export interface AuthorityDeps {
  db: Db;
  config: AuthorityConfig;
}

/** A stored key and certificate: a row of signing_certificates, opened. */
export interface StoredKey {
  id: number;
  key: KeyObject;
  /** DER. */
  certificate: Buffer;
  parsed: pkijs.Certificate;
  /** The bundle's certificates, DER (the row's certificate first). */
  chain: Buffer[];
}

export const CA_NAME = 'Signet CA';
export const TSA_NAME = 'Signet Timestamp Authority';
const CA_SUBJECT = [
  [OID.commonName, CA_NAME],
  [OID.organizationName, 'Signet'],
  [OID.organizationalUnitName, "This deployment's own certificate authority"],
] as const;
const TSA_SUBJECT = [
  [OID.commonName, TSA_NAME],
  [OID.organizationName, 'Signet'],
  [OID.organizationalUnitName, "Signet's own timestamp authority, not a qualified trust service"],
] as const;
/** The generated signing certificate's subject (unchanged since issue 5: pdfsig shows "Signet"). */
export const SIGNING_SUBJECT = [
  [OID.commonName, 'Signet'],
  [OID.organizationName, 'Signet'],
] as const;
const CA_YEARS = 20;
const LEAF_YEARS = 10;
/** How long a CRL is valid (nextUpdate - thisUpdate). */
export const CRL_VALIDITY_MS = 7 * 86_400_000;

/** The URL of a CA's CRL (pki-routes.ts serves it). */
export function crlUrl(appUrl: string, caId: number): string {
  return `${appUrl}/pki/crl/${caId}.crl`;
}

const secrets = new Map<string, Promise<string>>();
/** The deployment's secret key (SECRET_KEY_BASE or the file under DATA_DIR), read once per process. */
export function secretKeyOf(config: Pick<Config, 'secretKeyBase' | 'dataDir'>): Promise<string> {
  if (config.secretKeyBase) return Promise.resolve(config.secretKeyBase);
  let secret = secrets.get(config.dataDir);
  if (!secret) {
    secret = resolveSecretKeyBase(config);
    secret.catch(() => secrets.delete(config.dataDir));
    secrets.set(config.dataDir, secret);
  }
  return secret;
}

/**
 * Opened rows by id and the SHA-256 of their stored bundle (rows never change; a bundle costs a
 * key derivation to open). The digest keeps rows of two databases with the same id apart.
 */
const openedRows = new Map<string, StoredKey>();

interface KeyRow {
  id: number;
  p12: Uint8Array;
  password: string;
  sealed: boolean;
}

/**
 * Opens a row's bundle: unseals it with the secret key when sealed, then the PKCS#12.
 * @throws AppError UNAVAILABLE when it does not unseal or open
 */
export async function openKeyRow(config: Pick<Config, 'secretKeyBase' | 'dataDir'>, row: KeyRow): Promise<StoredKey> {
  const cacheKey = `${row.id}:${createHash('sha256').update(row.p12).digest('hex')}`;
  const cached = openedRows.get(cacheKey);
  if (cached) return cached;
  const what = `signing certificate #${row.id}`;
  let p12: Buffer = Buffer.from(row.p12);
  let password = row.password;
  if (row.sealed) {
    const secret = await secretKeyOf(config);
    p12 = unseal(secret, row.p12, what);
    password = unsealText(secret, row.password, what);
  }
  const opened = await openPkcs12Bundle(p12, password, what);
  const stored: StoredKey = {
    id: row.id,
    key: opened.key,
    certificate: opened.certificate,
    parsed: parseCertificate(opened.certificate),
    chain: [opened.certificate, ...opened.certificates.filter((c) => !c.equals(opened.certificate))],
  };
  if (openedRows.size >= 64) openedRows.clear();
  openedRows.set(cacheKey, stored);
  return stored;
}

const KEY_ROW = { id: true, p12: true, password: true, sealed: true } as const;

type KeyPair = { privateKey: KeyObject; publicKey: KeyObject };

/** A new RSA key pair (node's native generation; node-forge's takes seconds). */
async function newKeyPair(bits: number): Promise<KeyPair> {
  return generateKeyPair('rsa', { modulusLength: bits });
}

/** A positive 128-bit serial number (RFC 5280 §4.1.2.2). */
function newSerial(): Buffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  return serial;
}

function years(from: Date, count: number): Date {
  const date = new Date(from);
  date.setUTCFullYear(date.getUTCFullYear() + count);
  return date;
}

/**
 * A PKCS#12 of a key and certificates (node-forge: AES-256 key bag, SHA-1 MAC), the first
 * certificate being the key's. Certificates keep their exact DER (forge re-uses the parsed TBS).
 */
export function packPkcs12(key: KeyObject, certificates: Buffer[], password: string, friendlyName: string): Buffer {
  const forgeKey = forge.pki.privateKeyFromPem(key.export({ type: 'pkcs8', format: 'pem' }).toString());
  const forgeCerts = certificates.map((der) =>
    forge.pki.certificateFromAsn1(forge.asn1.fromDer(forge.util.createBuffer(der.toString('binary')))),
  );
  const asn1 = forge.pkcs12.toPkcs12Asn1(forgeKey, forgeCerts, password, {
    algorithm: 'aes256',
    useMac: true,
    friendlyName,
  });
  return Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');
}

/** A row's sealed bundle and password, ready to store. */
export async function sealedBundle(
  config: Pick<Config, 'secretKeyBase' | 'dataDir'>,
  p12: Buffer,
  password: string,
): Promise<{ p12: Uint8Array<ArrayBuffer>; password: string; sealed: true }> {
  const secret = await secretKeyOf(config);
  return { p12: new Uint8Array(seal(secret, p12)), password: sealText(secret, password), sealed: true };
}

type Tx = Parameters<Parameters<Db['$transaction']>[0]>[0];

/** The deployment's CA row, opened, or null. */
async function findCa(tx: Pick<Db, 'signingCertificate'>, config: AuthorityConfig): Promise<StoredKey | null> {
  const row = await tx.signingCertificate.findFirst({
    where: { kind: 'ca', accountId: null, revokedAt: null },
    orderBy: { id: 'desc' },
    select: KEY_ROW,
  });
  return row ? openKeyRow(config, row) : null;
}

/**
 * The deployment's CA, created on first use (under the lock, inside `tx`).
 * @param prepared a key pair generated beforehand (outside the transaction), used if a CA is made
 */
async function ensureCaIn(tx: Tx, config: AuthorityConfig, prepared: Promise<KeyPair> | undefined): Promise<StoredKey> {
  const existing = await findCa(tx, config);
  if (existing) return existing;
  const { privateKey, publicKey } = await (prepared ?? newKeyPair(3072));
  const now = new Date();
  const certificate = issueCertificate(
    {
      subject: CA_SUBJECT,
      publicKey,
      serialNumber: newSerial(),
      notBefore: new Date(now.getTime() - 5 * 60_000),
      notAfter: years(now, CA_YEARS),
      ca: true,
      keyUsage: [KEY_USAGE.keyCertSign, KEY_USAGE.cRLSign],
    },
    { selfSignedWith: privateKey },
  );
  const password = randomBytes(24).toString('base64url');
  const row = await tx.signingCertificate.create({
    data: {
      accountId: null,
      kind: 'ca',
      name: CA_NAME,
      ...(await sealedBundle(config, packPkcs12(privateKey, [certificate], password, CA_NAME), password)),
      certificate: new Uint8Array(certificate),
      notAfter: parseCertificate(certificate).notAfter.value,
    },
    select: KEY_ROW,
  });
  return openKeyRow(config, row);
}

/** Serial numbers and times of the certificates the CA issued and that were revoked before they expired. */
async function revokedBy(db: Pick<Db, 'signingCertificate'>, caId: number) {
  const rows = await db.signingCertificate.findMany({
    where: { issuerId: caId, revokedAt: { not: null }, certificate: { not: null } },
    select: { certificate: true, revokedAt: true, notAfter: true },
  });
  // An expired certificate retired afterwards was not revoked: it simply ended.
  return rows
    .filter((r) => !r.notAfter || r.revokedAt! < r.notAfter)
    .map((r) => ({ serialNumber: serialOf(parseCertificate(r.certificate!)), revokedAt: r.revokedAt! }));
}

/**
 * A CRL of the CA `caId` (RFC 5280 §5): every certificate it issued that was revoked, valid from
 * `thisUpdate` for CRL_VALIDITY_MS, numbered by its time in milliseconds (so numbers grow).
 * @returns its DER, or null when there is no such CA
 */
export async function issueCrl(deps: AuthorityDeps, caId: number, thisUpdate: Date): Promise<Buffer | null> {
  const row = await deps.db.signingCertificate.findFirst({ where: { id: caId, kind: 'ca' }, select: KEY_ROW });
  if (!row) return null;
  const ca = await openKeyRow(deps.config, row);
  return buildCrl({
    issuer: { certificate: ca.parsed, key: ca.key },
    revoked: await revokedBy(deps.db, caId),
    thisUpdate,
    nextUpdate: new Date(thisUpdate.getTime() + CRL_VALIDITY_MS),
    number: BigInt(thisUpdate.getTime()),
  });
}

/** The signing certificate's request: digitalSignature + nonRepudiation, emailProtection + documentSigning. */
function signingRequest(publicKey: KeyObject, now: Date, crl: string): CertificateRequest {
  return {
    subject: SIGNING_SUBJECT,
    publicKey,
    serialNumber: newSerial(),
    notBefore: new Date(now.getTime() - 5 * 60_000),
    notAfter: years(now, LEAF_YEARS),
    keyUsage: [KEY_USAGE.digitalSignature, KEY_USAGE.nonRepudiation],
    extKeyUsage: [OID.emailProtection, OID.documentSigning],
    crlUrl: crl,
  };
}

/**
 * A new generated signing certificate issued by the deployment's CA (creating the CA when there is
 * none), recorded as the instance's default (kind `signing`, account null), inside the caller's
 * locked transaction. Keys are generated before (`prepared`), outside any transaction.
 * @returns the row as stored and the CA that issued it
 */
export async function createGeneratedSigningCertificate(
  tx: Tx,
  config: AuthorityConfig,
  prepared: { ca: Promise<KeyPair> | undefined; leaf: Promise<KeyPair> },
): Promise<{ id: number; p12: Buffer; password: string; certificate: Buffer }> {
  const ca = await ensureCaIn(tx, config, prepared.ca);
  const { privateKey, publicKey } = await prepared.leaf;
  const now = new Date();
  const certificate = issueCertificate(signingRequest(publicKey, now, crlUrl(config.appUrl, ca.id)), {
    certificate: ca.parsed,
    key: ca.key,
  });
  const password = randomBytes(24).toString('base64url');
  const p12 = packPkcs12(privateKey, [certificate, ca.certificate], password, 'Signet');
  const row = await tx.signingCertificate.create({
    data: {
      accountId: null,
      kind: 'signing',
      name: 'Signet (generated)',
      ...(await sealedBundle(config, p12, password)),
      isDefault: true,
      certificate: new Uint8Array(certificate),
      issuerId: ca.id,
      notAfter: parseCertificate(certificate).notAfter.value,
    },
    select: { id: true },
  });
  return { id: row.id, p12, password, certificate };
}

/** Key pairs for the CA and a leaf, generated now (in parallel, off the event loop); the CA's only if needed. */
export function prepareKeys(needCa: boolean): { ca: Promise<KeyPair> | undefined; leaf: Promise<KeyPair> } {
  const ca = needCa ? newKeyPair(3072) : undefined;
  // A promise nobody awaits (another instance made the CA meanwhile) must not be an unhandled rejection.
  ca?.catch(() => undefined);
  return { ca, leaf: newKeyPair(2048) };
}

/** Whether the deployment has a CA yet (outside any lock: only to decide what to generate). */
export async function hasCa(db: Pick<Db, 'signingCertificate'>): Promise<boolean> {
  return (await db.signingCertificate.count({ where: { kind: 'ca', accountId: null, revokedAt: null } })) > 0;
}

/** The loaded TSA key, per database client (one deployment per client). */
const tsaKeys = new WeakMap<object, Promise<TimestampAuthorityKey>>();

/**
 * Signet's own timestamp authority: its key and certificate chain (TSA, CA), created on first use
 * with the CA, and cached per process.
 * @throws AppError UNAVAILABLE when the stored TSA or CA does not open (another SECRET_KEY_BASE)
 */
export function ownTimestampAuthority(deps: AuthorityDeps): Promise<TimestampAuthorityKey> {
  let loaded = tsaKeys.get(deps.db);
  if (!loaded) {
    loaded = loadOwnTimestampAuthority(deps);
    loaded.catch(() => tsaKeys.delete(deps.db));
    tsaKeys.set(deps.db, loaded);
  }
  return loaded;
}

async function loadOwnTimestampAuthority(deps: AuthorityDeps): Promise<TimestampAuthorityKey> {
  const find = async (db: Pick<Db, 'signingCertificate'>) => {
    const row = await db.signingCertificate.findFirst({
      where: { kind: 'tsa', accountId: null, revokedAt: null, notAfter: { gt: new Date() } },
      orderBy: { id: 'desc' },
      select: { ...KEY_ROW, issuerId: true },
    });
    if (!row) return null;
    const tsa = await openKeyRow(deps.config, row);
    const ca = row.issuerId
      ? await deps.db.signingCertificate.findUnique({ where: { id: row.issuerId }, select: { certificate: true } })
      : null;
    return {
      key: tsa.key,
      certificate: tsa.certificate,
      chain: [tsa.certificate, ...(ca?.certificate ? [Buffer.from(ca.certificate)] : [])],
    };
  };
  const found = await find(deps.db);
  if (found) return found;
  const needCa = !(await hasCa(deps.db));
  const caPair = needCa ? newKeyPair(3072) : undefined;
  caPair?.catch(() => undefined);
  const tsaPair = newKeyPair(3072);
  return deps.db.$transaction(
    async (tx) => {
      await lockGeneratedCertificate(tx);
      const again = await find(tx);
      if (again) return again;
      const ca = await ensureCaIn(tx, deps.config, caPair);
      const { privateKey, publicKey } = await tsaPair;
      const now = new Date();
      const certificate = issueCertificate(
        {
          subject: TSA_SUBJECT,
          publicKey,
          serialNumber: newSerial(),
          notBefore: new Date(now.getTime() - 5 * 60_000),
          notAfter: years(now, LEAF_YEARS),
          keyUsage: [KEY_USAGE.digitalSignature, KEY_USAGE.nonRepudiation],
          extKeyUsage: [OID.timeStamping],
          extKeyUsageCritical: true,
          crlUrl: crlUrl(deps.config.appUrl, ca.id),
        },
        { certificate: ca.parsed, key: ca.key },
      );
      const password = randomBytes(24).toString('base64url');
      await tx.signingCertificate.create({
        data: {
          accountId: null,
          kind: 'tsa',
          name: TSA_NAME,
          ...(await sealedBundle(
            deps.config,
            packPkcs12(privateKey, [certificate, ca.certificate], password, TSA_NAME),
            password,
          )),
          certificate: new Uint8Array(certificate),
          issuerId: ca.id,
          notAfter: parseCertificate(certificate).notAfter.value,
        },
      });
      return { key: privateKey, certificate, chain: [certificate, ca.certificate] };
    },
    { timeout: 30_000, maxWait: 30_000 },
  );
}
