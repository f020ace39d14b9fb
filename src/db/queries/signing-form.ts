/**
 * Row locks of the signer's form (src/signing-form/form-state.ts lockSignerForm).
 */
import type { Prisma } from '../../generated/prisma/client.ts';

/**
 * Inside a transaction: locks the submission's row, then the submitter's (always in that order,
 * as the API's PUT /submitters writes them, so the two never deadlock).
 */
export async function lockSubmissionAndSubmitter(
  tx: Pick<Prisma.TransactionClient, '$queryRaw'>,
  ids: { submissionId: number; submitterId: number },
): Promise<void> {
  await tx.$queryRaw`SELECT id FROM submissions WHERE id = ${ids.submissionId} FOR UPDATE`;
  await tx.$queryRaw`SELECT id FROM submitters WHERE id = ${ids.submitterId} FOR UPDATE`;
}
