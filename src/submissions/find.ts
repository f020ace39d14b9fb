/**
 * Tenant checks for submissions, submitters and bulk sends: an unknown id is NOT_FOUND (404), another
 * account's is FORBIDDEN (403 `{"error":"Not authorized"}`), as DocuSeal (reference §2); for an API
 * key limited to folders, one whose template is outside them is FORBIDDEN too (as its template:
 * src/templates/find-template.ts, src/accounts/key-scopes.ts).
 */
import { inKeyFolders, type KeyFolders, outsideFoldersError } from '../accounts/key-scopes.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { AppError } from '../errors.ts';

/** The template's folder, read only for a key limited to folders. */
const templateFolder = (folders: KeyFolders | null | undefined) =>
  folders ? { template: { select: { folderId: true } } } : {};

/**
 * @param options.folders the folders the caller's key is limited to; null (or absent: a caller
 *   without a key) for every folder
 * @throws AppError NOT_FOUND ("Submission <id> not found") or FORBIDDEN
 */
export async function findSubmissionForAccount(
  db: Pick<Prisma.TransactionClient, 'submission'>,
  options: { id: number; accountId: number; folders?: KeyFolders | null | undefined },
) {
  const submission = await db.submission.findUnique({
    where: { id: options.id },
    select: {
      id: true,
      accountId: true,
      archivedAt: true,
      completedAt: true,
      expireAt: true,
      ...templateFolder(options.folders),
    },
  });
  if (!submission) throw new AppError('NOT_FOUND', `Submission ${options.id} not found`);
  if (submission.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  const folderId = (submission as { template?: { folderId: number | null } }).template?.folderId ?? null;
  if (options.folders && !inKeyFolders(folderId, options.folders)) throw outsideFoldersError();
  return { ...submission, template: undefined };
}

/**
 * @param options.folders as findSubmissionForAccount's
 * @throws AppError NOT_FOUND ("Submitter <id> not found") or FORBIDDEN
 */
export async function findSubmitterForAccount(
  db: Pick<Prisma.TransactionClient, 'submitter'>,
  options: { id: number; accountId: number; folders?: KeyFolders | null | undefined },
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
      ...(options.folders ? { submission: { select: templateFolder(options.folders) } } : {}),
    },
  });
  if (!submitter) throw new AppError('NOT_FOUND', `Submitter ${options.id} not found`);
  if (submitter.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  const folderId =
    (submitter as { submission?: { template?: { folderId: number | null } } }).submission?.template?.folderId ?? null;
  if (options.folders && !inKeyFolders(folderId, options.folders)) throw outsideFoldersError();
  return { ...submitter, submission: undefined };
}

/**
 * @param options.folders as findSubmissionForAccount's (the bulk send's template's folder)
 * @throws AppError NOT_FOUND ("Bulk send <id> not found") or FORBIDDEN
 */
export async function findBulkSendForAccount(
  db: Pick<Prisma.TransactionClient, 'bulkSend'>,
  options: { id: number; accountId: number; folders?: KeyFolders | null | undefined },
) {
  const bulkSend = await db.bulkSend.findUnique({
    where: { id: options.id },
    select: { id: true, accountId: true, templateId: true, status: true, ...templateFolder(options.folders) },
  });
  if (!bulkSend) throw new AppError('NOT_FOUND', `Bulk send ${options.id} not found`);
  if (bulkSend.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  const folderId = (bulkSend as { template?: { folderId: number | null } }).template?.folderId ?? null;
  if (options.folders && !inKeyFolders(folderId, options.folders)) throw outsideFoldersError();
  return { ...bulkSend, template: undefined };
}
