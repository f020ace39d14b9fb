/**
 * Transaction-scoped advisory locks (pg_advisory_xact_lock): each serialises one check-then-create
 * across instances, and is released by the transaction's end. The keys, in one place so that none
 * is taken twice: 7301001 first start, 7301002 folders (per account), 7301005 the generated
 * certificate, 7301008 a submission's kept documents (per submission); 7301006 is completion's
 * session lock (./completion.ts), 7301007 storage keys (./stored-file-keys.ts), 7301017 a submission's
 * audit chain (the submission_events insert trigger, prisma/migrations/20261127150000_pades_audit_chain),
 * and migrations use Prisma Migrate's own key (../migrate.ts).
 */
import type { Prisma } from '../../generated/prisma/client.ts';

type Tx = Pick<Prisma.TransactionClient, '$executeRaw'>;

/** Serialises first-start checks of instances starting together (src/accounts/development-account.ts). */
export async function lockFirstStart(tx: Tx): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${7_301_001})`;
}

/** Serialises the creation of an account's folders (src/templates/folders.ts). */
export async function lockAccountFolders(tx: Tx, accountId: number): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(7301002, ${accountId})`;
}

/** Serialises the creation of the instance's generated signing certificate (src/signing/certificates.ts). */
export async function lockGeneratedCertificate(tx: Tx): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${7301005}::int, ${0}::int)`;
}

/**
 * Serialises the recording of a submission's kept documents that are made on request (the
 * documents as filled so far, the merged and combined PDFs: src/signing/submission-outputs.ts), so
 * two requests making the same one record it once.
 */
export async function lockSubmissionOutputs(tx: Tx, submissionId: number): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${7301008}::int, ${submissionId}::int)`;
}
