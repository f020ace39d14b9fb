/**
 * Tenant checks for submissions, submitters and bulk sends: an unknown id is NOT_FOUND (404), another
 * account's is FORBIDDEN (403 `{"error":"Not authorized"}`), as DocuSeal (reference §2).
 */
import type { Prisma } from '../generated/prisma/client.ts';
import { AppError } from '../errors.ts';

/** @throws AppError NOT_FOUND ("Submission <id> not found") or FORBIDDEN */
export async function findSubmissionForAccount(
  db: Pick<Prisma.TransactionClient, 'submission'>,
  options: { id: number; accountId: number },
) {
  const submission = await db.submission.findUnique({
    where: { id: options.id },
    select: { id: true, accountId: true, archivedAt: true, completedAt: true, expireAt: true },
  });
  if (!submission) throw new AppError('NOT_FOUND', `Submission ${options.id} not found`);
  if (submission.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  return submission;
}

/** @throws AppError NOT_FOUND ("Submitter <id> not found") or FORBIDDEN */
export async function findSubmitterForAccount(
  db: Pick<Prisma.TransactionClient, 'submitter'>,
  options: { id: number; accountId: number },
) {
  const submitter = await db.submitter.findUnique({
    where: { id: options.id },
    select: {
      id: true,
      accountId: true,
      submissionId: true,
      completedAt: true,
      declinedAt: true,
      roleUuid: true,
      values: true,
      preferences: true,
      email: true,
      phone: true,
    },
  });
  if (!submitter) throw new AppError('NOT_FOUND', `Submitter ${options.id} not found`);
  if (submitter.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  return submitter;
}

/** @throws AppError NOT_FOUND ("Bulk send <id> not found") or FORBIDDEN */
export async function findBulkSendForAccount(
  db: Pick<Prisma.TransactionClient, 'bulkSend'>,
  options: { id: number; accountId: number },
) {
  const bulkSend = await db.bulkSend.findUnique({
    where: { id: options.id },
    select: { id: true, accountId: true, templateId: true, status: true },
  });
  if (!bulkSend) throw new AppError('NOT_FOUND', `Bulk send ${options.id} not found`);
  if (bulkSend.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  return bulkSend;
}
