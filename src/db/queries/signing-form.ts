/**
 * Row locks of the signer's form (src/signing-form/form-state.ts lockSignerForm).
 */
import type { Prisma } from '../../generated/prisma/client.ts';

/**
 * Inside a transaction: locks the submission's row, then the submitter's (always in that order,
 * as the API's PUT /submitters writes them, so the two never deadlock).
 *
 * FOR NO KEY UPDATE, the lock an UPDATE of non-key columns takes: it serialises the form's
 * operations and the API's writes all the same, but lets rows that refer to the submission or the
 * submitter be inserted meanwhile (their foreign-key checks take FOR KEY SHARE, which FOR UPDATE
 * blocks). With FOR UPDATE, a signature request job's statement (its email row, its `send_email`
 * event, whose audit-chain trigger takes the submission's advisory lock, then the foreign-key
 * check on the submission) deadlocked with a decline or a completion of another party of the same
 * submission, which held the row and waited for that advisory lock (PostgreSQL "Explicit Row-Level
 * Locks", table 13.3).
 */
export async function lockSubmissionAndSubmitter(
  tx: Pick<Prisma.TransactionClient, '$queryRaw'>,
  ids: { submissionId: number; submitterId: number },
): Promise<void> {
  await tx.$queryRaw`SELECT id FROM submissions WHERE id = ${ids.submissionId} FOR NO KEY UPDATE`;
  await tx.$queryRaw`SELECT id FROM submitters WHERE id = ${ids.submitterId} FOR NO KEY UPDATE`;
}
