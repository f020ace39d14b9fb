/**
 * Changing submissions and submitters: PUT /submissions/{id} (name, expire_at, archived; §7.7),
 * DELETE /submissions/{id} (archive; §7.8), PUT /submitters/{id} (§8). Each change is one
 * transaction with what it causes (an expiry job, submission.archived, a completion, requests):
 * the outbox, src/jobs/outbox.ts.
 */
import type { Db } from '../db/client.ts';
import type { SideEffects } from '../events/events.ts';
import { completionJob } from '../signing/complete-submission.ts';
import { expiryJobs, nextPartyJobs, requestJobs } from './send-requests.ts';
import type { FileStorage } from '../documents/storage.ts';
import { AppError } from '../errors.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { parseFields } from '../templates/fields.ts';
import {
  applyPrefill,
  storeStagedFiles,
  type CreateSubmissionsOptions,
  type StagedFile,
} from './create-submissions.ts';
import { findSubmissionForAccount, findSubmitterForAccount } from './find.ts';
import { parseInput } from '../accounts/api-keys.ts';
import { checkText, MAX_LENGTH } from '../limits.ts';
import { checkEmailAndPhone, isValidEmailList, SubmitterChanges, type SubmitterInput } from './submitter-input.ts';

interface Actor {
  accountId: number;
  userId: number;
}

/** What the changes below need: the database and the transaction that records their effects. */
export interface ChangeDeps {
  db: Db;
  effects: Pick<SideEffects, 'transaction'>;
}

/**
 * Updates a submission's name, expiry or archive state; a new expiry schedules its job, and
 * submission.archived is raised when this call archived it (reference §7.7: when newly archived).
 * @param changes `expireAt: null` clears the expiry; `archived` true archives (keeping an earlier time), false restores
 * @returns `archived`: whether this call archived it (it was not archived before)
 * @throws AppError NOT_FOUND / FORBIDDEN; VALIDATION "name is too long (maximum is 255 characters)."
 */
export async function updateSubmission(
  deps: ChangeDeps,
  actor: Actor,
  id: number,
  changes: { name?: string | null; expireAt?: Date | null; archived?: boolean },
): Promise<{ archived: boolean }> {
  checkText(changes.name, MAX_LENGTH.name, 'name');
  const submission = await findSubmissionForAccount(deps.db, { id, accountId: actor.accountId });
  const now = new Date();
  const data: Prisma.SubmissionUpdateInput = { updatedAt: now };
  if (changes.name !== undefined) data.name = changes.name;
  if (changes.expireAt !== undefined) data.expireAt = changes.expireAt;
  if (changes.archived === true && !submission.archivedAt) data.archivedAt = now;
  if (changes.archived === false) data.archivedAt = null;
  const archived = data.archivedAt instanceof Date;
  await deps.effects.transaction(async (tx, effects) => {
    await tx.submission.update({ where: { id }, data, select: { id: true } });
    effects.jobs.push(...expiryJobs(id, changes.expireAt));
    if (archived)
      effects.events.push({ type: 'submission.archived', accountId: actor.accountId, recordId: id, at: now });
  });
  return { archived };
}

/**
 * Archives a submission; DocuSeal sets archived_at again on every call (§7.8), so do we, and
 * raises submission.archived on every call.
 * @throws AppError NOT_FOUND / FORBIDDEN
 */
export async function archiveSubmission(
  deps: ChangeDeps,
  actor: Actor,
  id: number,
): Promise<{ id: number; archivedAt: Date }> {
  await findSubmissionForAccount(deps.db, { id, accountId: actor.accountId });
  const now = new Date();
  await deps.effects.transaction(async (tx, effects) => {
    await tx.submission.update({ where: { id }, data: { archivedAt: now }, select: { id: true } });
    effects.events.push({ type: 'submission.archived', accountId: actor.accountId, recordId: id, at: now });
  });
  return { id, archivedAt: now };
}

export interface UpdateSubmitterInput
  extends Pick<SubmitterInput, 'values' | 'fields' | 'readonly_fields' | 'message'> {
  name?: string;
  email?: string;
  phone?: string;
  externalId?: string;
  sendEmail?: boolean;
  sendSms?: boolean;
  replyTo?: string;
  completedRedirectUrl?: string;
  completed?: boolean;
}

/**
 * Updates a submitter: contact data, values merged into the existing ones, field settings,
 * preferences; `completed: true` completes it (api_complete_form), with the completion
 * pipeline's job and the next parties' requests; otherwise `sendEmail`/`sendSms` true sends the
 * request again (a new sending, not deduplicated away).
 * @throws AppError NOT_FOUND / FORBIDDEN; VALIDATION "Submitter has already completed the submission."
 *   or "... declined ...", DocuSeal's messages for bad email/phone, and sizes over src/limits.ts
 *   ("name is too long (maximum is 255 characters).", "values.Comment is too long …")
 */
export async function updateSubmitter(
  deps: ChangeDeps & { storage: FileStorage },
  actor: Actor,
  id: number,
  input: UpdateSubmitterInput,
  download: CreateSubmissionsOptions['download'],
  images: CreateSubmissionsOptions['images'],
): Promise<void> {
  const { db } = deps;
  // The shape and sizes of every change first (`fields` and `message` arrive as free JSON).
  const changes = parseInput(SubmitterChanges, {
    name: input.name,
    email: input.email,
    phone: input.phone,
    values: input.values,
    external_id: input.externalId,
    completed_redirect_url: input.completedRedirectUrl,
    reply_to: input.replyTo,
    message: input.message,
    fields: input.fields,
    readonly_fields: input.readonly_fields,
  });
  const submitter = await findSubmitterForAccount(db, { id, accountId: actor.accountId });
  const submission = await db.submission.findUniqueOrThrow({
    where: { id: submitter.submissionId },
    select: { completedAt: true, templateFields: true },
  });
  if (submitter.completedAt || submission.completedAt)
    throw new AppError('VALIDATION', 'Submitter has already completed the submission.');
  if (submitter.declinedAt) throw new AppError('VALIDATION', 'Submitter has already declined the submission.');
  checkEmailAndPhone(input, 'submitter');
  if (input.replyTo && !isValidEmailList(input.replyTo)) throw new AppError('VALIDATION', 'reply_to email is invalid');

  const fields = parseFields(submission.templateFields);
  const own = fields.filter((f) => f.submitter_uuid === submitter.roleUuid);
  const staged: StagedFile[] = [];
  const { values, phone } = await applyPrefill(
    { download, images, staged },
    own,
    { values: changes.values, fields: changes.fields, readonly_fields: changes.readonly_fields, phone: changes.phone },
    'submitter',
    (submitter.values ?? {}) as Record<string, unknown>,
  );
  const preferences = { ...((submitter.preferences ?? {}) as Record<string, unknown>) };
  if (input.sendEmail !== undefined) preferences.send_email = input.sendEmail;
  if (input.sendSms !== undefined) preferences.send_sms = input.sendSms;
  if (input.replyTo !== undefined) preferences.reply_to = input.replyTo;
  if (input.completedRedirectUrl !== undefined) preferences.completed_redirect_url = input.completedRedirectUrl;
  if (changes.message !== undefined) preferences.message = changes.message;

  const now = new Date();
  await deps.effects.transaction(async (tx, effects) => {
    await tx.submission.update({
      where: { id: submitter.submissionId },
      data: { templateFields: fields as unknown as Prisma.InputJsonValue },
    });
    const updated = await tx.submitter.update({
      where: { id },
      data: {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.email !== undefined ? { email: input.email.trim().toLowerCase() } : {}),
        ...(phone !== null ? { phone } : {}),
        ...(input.externalId !== undefined ? { externalId: input.externalId } : {}),
        values: (await storeStagedFiles(tx, deps.storage, actor.accountId, staged, values)) as Prisma.InputJsonValue,
        preferences: preferences as Prisma.InputJsonValue,
        ...(input.completed ? { completedAt: now } : {}),
      },
      select: { id: true, email: true, phone: true },
    });
    if (input.completed) {
      await tx.submissionEvent.create({
        data: {
          accountId: actor.accountId,
          submissionId: submitter.submissionId,
          submitterId: id,
          eventType: 'api_complete_form',
        },
      });
      const pending = await tx.submitter.count({ where: { submissionId: submitter.submissionId, completedAt: null } });
      if (pending === 0)
        await tx.submission.update({ where: { id: submitter.submissionId }, data: { completedAt: now } });
      effects.jobs.push(
        completionJob(submitter.submissionId, id),
        ...(await nextPartyJobs(tx, submitter.submissionId)),
      );
    } else if (input.sendEmail === true || input.sendSms === true) {
      const sends = await tx.submissionEvent.count({
        where: { submitterId: id, eventType: { in: ['send_email', 'send_sms'] } },
      });
      const channels = { ...preferences, send_email: input.sendEmail === true, send_sms: input.sendSms === true };
      effects.jobs.push(...requestJobs([{ ...updated, preferences: channels }], sends + 1));
    }
  });
}
