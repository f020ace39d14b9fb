/**
 * Permanent deletes: `DELETE /submissions/{id}?permanently=true` and
 * `DELETE /templates/{id}?permanently=true` (DocuSeal's Api::SubmissionsController#destroy and
 * Api::TemplatesController#destroy: `@record.destroy!` when `permanently` is true or "true"). As
 * DocuSeal's models destroy with them (app/models/template.rb `has_many :submissions, dependent:
 * :destroy`; submission.rb submitters and submission_events; submitter.rb its events; their
 * attached files): a template goes with all its submissions, a submission with its submitters,
 * events, completed documents, email and SMS messages; and the stored files only they used.
 * Beyond DocuSeal: the webhook deliveries of their events go too (their payloads hold the
 * records' data), so a pending one is not sent. No event is raised (DocuSeal enqueues none).
 *
 * Here, beside the templates, because a template's delete takes its submissions with it; the
 * submissions' own delete (src/submissions/submission-actions.ts) calls it too, so the imports run
 * from submissions to templates only.
 *
 * One transaction deletes the rows (the database's ON DELETE CASCADE does most) and records the
 * job that removes the bytes no row uses any more, which runs after the commit
 * (src/documents/unused-files.ts). Jobs of the deleted records still pending end quietly when
 * they find the records gone (requests, expiry, completion, completed emails, webhook dispatch and
 * delivery).
 */
import {
  deleteDeliveriesOfRecords,
  deleteUnusedStoredFiles,
  filesOfRecords,
  lockRecordsForDelete,
} from '../db/queries/permanent-delete.ts';
import { unusedFilesJobs } from '../documents/unused-files.ts';
import type { Effects } from '../events/events.ts';
import type { Prisma } from '../generated/prisma/client.ts';

/**
 * How long a permanent delete's transaction may take, in milliseconds: a template may have
 * thousands of submissions, all deleted in it (the cascades do the work).
 */
export const DELETE_TRANSACTION = { timeout: 60_000, maxWait: 15_000 };

/**
 * Deletes, inside the caller's transaction, a template (or none) with all its submissions, and
 * the given submissions, with everything that hangs off them (module comment), and the stored_files
 * rows only they used; records in `effects` the job that removes those rows' bytes after the
 * commit. The records are locked first (src/db/queries/permanent-delete.ts lockRecordsForDelete).
 * The caller has checked that they are the account's (404/403).
 * @param options.submissionIds submissions of the account to delete (besides the template's)
 * @returns the ids of the submissions deleted
 */
export async function deleteRecordsPermanently(
  tx: Prisma.TransactionClient,
  effects: Effects,
  options: { accountId: number; templateId: number | null; submissionIds: number[] },
): Promise<number[]> {
  const { accountId, templateId } = options;
  const submissionIds = await lockRecordsForDelete(tx, options);
  const records = { accountId, templateId, submissionIds };
  const fileIds = await filesOfRecords(tx, records);
  await deleteDeliveriesOfRecords(tx, records);
  // Submitters, events, completed documents, messages and list items go by ON DELETE CASCADE.
  if (submissionIds.length > 0) await tx.submission.deleteMany({ where: { id: { in: submissionIds }, accountId } });
  // Its documents and events by cascade; its folder stays (as DocuSeal's).
  if (templateId !== null) await tx.template.deleteMany({ where: { id: templateId, accountId } });
  effects.jobs.push(...unusedFilesJobs(await deleteUnusedStoredFiles(tx, accountId, fileIds)));
  return submissionIds;
}
