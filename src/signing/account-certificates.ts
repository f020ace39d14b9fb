/**
 * An account's own signing certificates (issue 17): a PKCS#12 (key and certificate, with its chain)
 * uploaded with its password through the CLI (`signet certificate upload`) or GraphQL
 * (`uploadSigningCertificate`), stored sealed with SECRET_KEY_BASE (sealed-secrets.ts), and used
 * for the account's documents instead of the service's (certificates.ts loadSigningIdentity: the
 * last uploaded, or after a revoke the newest remaining valid one; when it has expired, the
 * service's certificate signs).
 *
 * At upload the bundle must open with the password, hold an RSA key with its certificate (the
 * signer node-forge reads: pkcs12.ts openPkcs12), be valid now and not expired, and allow
 * signing (keyUsage digitalSignature or nonRepudiation when the certificate restricts it). Expiry
 * is announced before it comes: `expiryWarning` (GraphQL, CLI list) from
 * SIGNING_CERTIFICATE_WARNING_DAYS before notAfter, and the log once a day when a completion signs
 * with it (certificates.ts); once expired, the service's certificate signs instead.
 */
import { parseInput } from '../accounts/api-keys.ts';
import type { Db } from '../db/client.ts';
import { lockAccountCap } from '../db/queries/advisory-locks.ts';
import { AppError } from '../errors.ts';
import { PKI_LIMITS } from '../limits.ts';
import { sealedBundle } from './certificate-authority.ts';
import { UploadSigningCertificateRequest } from './signing-certificate-input.ts';
import type { SigningConfig } from './certificates.ts';
import { openPkcs12Bundle } from './pkcs12.ts';
import {
  type CertificateSummary,
  commonNameOf,
  extensionOf,
  OID,
  parseCertificate,
  summarizeCertificate,
} from './pki.ts';

/** A stored certificate as the API shows it (never the key or the password). */
export interface SigningCertificateView extends CertificateSummary {
  id: number;
  name: string;
  /** Signs the account's documents now: the newest one neither revoked nor expired. */
  inUse: boolean;
  revokedAt: Date | null;
  createdAt: Date;
  /** Set from SIGNING_CERTIFICATE_WARNING_DAYS before it expires, and once it has: what to do. */
  expiryWarning: string | null;
}

/**
 * The warning for a certificate that expires within `days` of `now`, or has expired; null otherwise.
 */
export function expiryWarning(notAfter: Date, now: Date, days: number): string | null {
  const left = notAfter.getTime() - now.getTime();
  if (left <= 0)
    return `Expired on ${notAfter.toISOString()}: the account's documents are signed with the service's certificate.`;
  if (left > days * 86_400_000) return null;
  return `Expires on ${notAfter.toISOString()} (in ${Math.ceil(left / 86_400_000)} days): upload its successor.`;
}

const ROW = {
  id: true,
  name: true,
  certificate: true,
  isDefault: true,
  revokedAt: true,
  createdAt: true,
  notAfter: true,
} as const;

type Row = {
  id: number;
  name: string;
  certificate: Uint8Array | null;
  isDefault: boolean;
  revokedAt: Date | null;
  createdAt: Date;
  notAfter: Date | null;
};

function viewOf(row: Row, inUse: boolean, config: Pick<SigningConfig, 'signingCertificateWarningDays'>) {
  const certificate = parseCertificate(row.certificate!);
  return {
    id: row.id,
    name: row.name,
    ...summarizeCertificate(certificate, row.certificate!),
    inUse,
    revokedAt: row.revokedAt,
    createdAt: row.createdAt,
    expiryWarning:
      row.revokedAt === null
        ? expiryWarning(certificate.notAfter.value, new Date(), config.signingCertificateWarningDays)
        : null,
  } satisfies SigningCertificateView;
}

/** The certificates of an account, newest first; `inUse` marks the one its documents are signed with. */
export async function listSigningCertificates(
  deps: { db: Pick<Db, 'signingCertificate'>; config: Pick<SigningConfig, 'signingCertificateWarningDays'> },
  options: { accountId: number },
): Promise<SigningCertificateView[]> {
  const rows = await deps.db.signingCertificate.findMany({
    where: { accountId: options.accountId, kind: 'signing', certificate: { not: null } },
    select: ROW,
    orderBy: { id: 'desc' },
  });
  const now = Date.now();
  const inUse = rows.find((r) => r.isDefault && r.revokedAt === null && (r.notAfter?.getTime() ?? 0) > now)?.id;
  return rows.map((row) => viewOf(row, row.id === inUse, deps.config));
}

/**
 * Stores an account's own PKCS#12 as its signing certificate (see the module comment); the
 * account's documents are signed with it from the next completion on.
 * @throws AppError VALIDATION when the file is not base64 of a PKCS#12 that opens with the password,
 *   holds no RSA key with its certificate, is not valid yet or has expired, does not allow signing,
 *   or the account keeps PKI_LIMITS.certificatesPerAccount already; nothing is stored then
 */
export async function uploadSigningCertificate(
  deps: { db: Db; config: SigningConfig },
  options: { accountId: number; request: unknown },
): Promise<SigningCertificateView> {
  const request = parseInput(UploadSigningCertificateRequest, options.request);
  const p12 = Buffer.from(request.file, 'base64');
  if (p12.length === 0 || p12.length > PKI_LIMITS.pkcs12Bytes)
    throw new AppError('VALIDATION', `file must be a PKCS#12 of at most ${PKI_LIMITS.pkcs12Bytes / 1024} KB, base64.`);
  let opened: Awaited<ReturnType<typeof openPkcs12Bundle>>;
  try {
    opened = await openPkcs12Bundle(p12, request.password, 'the file', {
      passwordName: 'the password given',
      owner: options.accountId,
    });
  } catch (error) {
    // The bundle's faults (and its parse's limits) are the caller's: 422. A busy parse pool stays a 503.
    if (error instanceof AppError && error.details?.retryAfterSeconds !== undefined) throw error;
    throw new AppError('VALIDATION', (error as Error).message.replace(/^Signing certificate: /, ''), { cause: error });
  }
  const certificate = parseCertificate(opened.certificate);
  const now = new Date();
  if (certificate.notAfter.value <= now)
    throw new AppError('VALIDATION', `The certificate expired on ${certificate.notAfter.value.toISOString()}.`);
  if (certificate.notBefore.value > now)
    throw new AppError(
      'VALIDATION',
      `The certificate is not valid before ${certificate.notBefore.value.toISOString()}.`,
    );
  const keyUsage = extensionOf(certificate, OID.keyUsage);
  if (keyUsage) {
    const bits = new Uint8Array(
      (keyUsage.parsedValue as { valueBlock: { valueHexView: Uint8Array } }).valueBlock.valueHexView,
    );
    // digitalSignature (bit 0) or nonRepudiation (bit 1), RFC 5280 §4.2.1.3.
    if (((bits[0] ?? 0) & 0xc0) === 0)
      throw new AppError('VALIDATION', 'The certificate does not allow signing (keyUsage without digitalSignature).');
  }
  const name = request.name?.trim() || commonNameOf(certificate.subject) || 'Signing certificate';
  const sealed = await sealedBundle(deps.config, p12, request.password);
  const row = await deps.db.$transaction(async (tx) => {
    // Uploads at once count one after the other (lockAccountCap, taken first).
    await lockAccountCap(tx, 'signingCertificates', options.accountId);
    const kept = await tx.signingCertificate.count({ where: { accountId: options.accountId } });
    if (kept >= PKI_LIMITS.certificatesPerAccount)
      throw new AppError(
        'VALIDATION',
        `An account keeps at most ${PKI_LIMITS.certificatesPerAccount} signing certificates.`,
      );
    await tx.signingCertificate.updateMany({
      where: { accountId: options.accountId, kind: 'signing', isDefault: true },
      data: { isDefault: false },
    });
    return tx.signingCertificate.create({
      data: {
        accountId: options.accountId,
        kind: 'signing',
        name,
        ...sealed,
        isDefault: true,
        certificate: new Uint8Array(opened.certificate),
        notAfter: certificate.notAfter.value,
      },
      select: ROW,
    });
  });
  return viewOf(row, true, deps.config);
}

/**
 * Revokes one of the account's certificates: it signs nothing more, and the account's newest other
 * valid one (else the service's) signs instead. Documents it signed stay trusted by /tools/verify.
 * @throws AppError NOT_FOUND when no account has such a certificate, FORBIDDEN when another account does
 */
export async function revokeSigningCertificate(
  deps: { db: Db; config: Pick<SigningConfig, 'signingCertificateWarningDays'> },
  options: { accountId: number; id: number },
): Promise<SigningCertificateView> {
  return deps.db.$transaction(async (tx) => {
    // An account's own certificates only (the service's generated ones have no account): another
    // account's is FORBIDDEN, as every record of another account (docs/security.md).
    const found = await tx.signingCertificate.findFirst({
      where: { id: options.id, accountId: { not: null }, kind: 'signing', certificate: { not: null } },
      select: { id: true, accountId: true, revokedAt: true },
    });
    if (!found) throw new AppError('NOT_FOUND', `Signing certificate ${options.id} not found`);
    if (found.accountId !== options.accountId) throw new AppError('FORBIDDEN');
    const row = await tx.signingCertificate.update({
      where: { id: found.id },
      data: { revokedAt: found.revokedAt ?? new Date(), isDefault: false },
      select: ROW,
    });
    // The newest remaining valid one becomes the account's.
    const next = await tx.signingCertificate.findFirst({
      where: { accountId: options.accountId, kind: 'signing', revokedAt: null, notAfter: { gt: new Date() } },
      orderBy: { id: 'desc' },
      select: { id: true },
    });
    if (next)
      await tx.signingCertificate.updateMany({
        where: { accountId: options.accountId, kind: 'signing', isDefault: true },
        data: { isDefault: false },
      });
    if (next) await tx.signingCertificate.update({ where: { id: next.id }, data: { isDefault: true } });
    return viewOf(row, false, deps.config);
  });
}
