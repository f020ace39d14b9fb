/**
 * Transaction-scoped advisory locks (pg_advisory_xact_lock): each serialises one check-then-create
 * across instances, and is released by the transaction's end. The keys, in one place so that none
 * is taken twice: 7301001 first start, 7301002 folders (per account), 7301005 the generated
 * certificate, 7301008 a submission's kept documents (per submission), 7301021–7301023 an account's
 * counted records (per account: lockAccountCap); 7301006 is completion's session lock
 * (./completion.ts), 7301007 storage keys (./stored-file-keys.ts), 7301017 a submission's audit chain
 * (the submission_events insert trigger, prisma/migrations/20261127150000_pades_audit_chain), 7301024
 * the fair claim of jobs limited per key (./jobs.ts), and migrations use Prisma Migrate's own key
 * (../migrate.ts).
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

/**
 * The records an account may keep only so many of (src/limits.ts), each with its lock space: the
 * check of a cap and the insert it allows are serialised per account and kind.
 */
const ACCOUNT_CAP_SPACES = {
  /** Bulk sends in progress (MAX_ITEMS.activeBulkSends; src/submissions/create-bulk-send.ts). */
  activeBulkSends: 7_301_021,
  /** Webhook endpoints (MAX_ITEMS.webhookEndpoints; src/webhooks/endpoints.ts). */
  webhookEndpoints: 7_301_022,
  /** Signing certificates (PKI_LIMITS.certificatesPerAccount; src/signing/account-certificates.ts). */
  signingCertificates: 7_301_023,
} as const;

export type AccountCap = keyof typeof ACCOUNT_CAP_SPACES;

/**
 * Serialises, per account and cap, the transactions that count an account's records against a cap
 * and then insert one (issue 23 "Caps are atomic"): under READ COMMITTED two transactions that
 * count at once both see the count before either insert, and both insert; with this lock taken
 * first the second counts after the first has committed (or rolled back). Held to the end of the
 * transaction.
 *
 * Lock order: take it FIRST in the transaction, before any row lock, any other advisory lock or any
 * write, and take one cap per transaction. Then it waits for nothing but the same lock, and no cycle
 * with the row locks of form operations (FOR NO KEY UPDATE, ./signing-form.ts) or the audit chain's
 * advisory lock (taken by submission_events inserts) can form (the deadlock of c8fc108).
 */
export async function lockAccountCap(tx: Tx, cap: AccountCap, accountId: number): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${ACCOUNT_CAP_SPACES[cap]}::int, ${accountId}::int)`;
}
