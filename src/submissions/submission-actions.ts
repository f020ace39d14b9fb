/**
 * Changing submissions and submitters: PUT /submissions/{id} (name, expire_at, archived; §7.7),
 * DELETE /submissions/{id} (archive; §7.8), PUT /submitters/{id} (§8).
 */
import type { Db } from '../db/client.ts';
import type { FileStorage } from '../documents/storage.ts';
import { AppError } from '../errors.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { parseFields } from '../templates/fields.ts';
import { applyPrefill, storeStagedFiles, type CreateSubmissionsOptions, type StagedFile } from './create-submissions.ts';
import { findSubmissionForAccount, findSubmitterForAccount } from './find.ts';
import { checkEmailAndPhone, isValidEmailList, type SubmitterInput } from './submitter-input.ts';

interface Actor {
  accountId: number;
  userId: number;
}

/**
 * Updates a submission's name, expiry or archive state.
 * @param changes `expireAt: null` clears the expiry; `archived` true archives (keeping an earlier time), false restores
 * @returns `archived`: whether this call archived it (it was not archived before), for
 *   submission.archived (reference §7.7: emitted when newly archived)
 * @throws AppError NOT_FOUND / FORBIDDEN
 */
export async function updateSubmission(
  db: Db,
  actor: Actor,
  id: number,
  changes: { name?: string | null; expireAt?: Date | null; archived?: boolean },
): Promise<{ archived: boolean }> {
  const submission = await findSubmissionForAccount(db, { id, accountId: actor.accountId });
  const data: Prisma.SubmissionUpdateInput = { updatedAt: new Date() };
  if (changes.name !== undefined) data.name = changes.name;
  if (changes.expireAt !== undefined) data.expireAt = changes.expireAt;
  if (changes.archived === true && !submission.archivedAt) data.archivedAt = new Date();
  if (changes.archived === false) data.archivedAt = null;
  await db.submission.update({ where: { id }, data });
  return { archived: data.archivedAt instanceof Date };
}

/**
 * Archives a submission; DocuSeal sets archived_at again on every call (§7.8), so do we.
 * @throws AppError NOT_FOUND / FORBIDDEN
 */
export async function archiveSubmission(db: Db, actor: Actor, id: number): Promise<{ id: number; archivedAt: Date }> {
  await findSubmissionForAccount(db, { id, accountId: actor.accountId });
  const archived = await db.submission.update({ where: { id }, data: { archivedAt: new Date() }, select: { id: true, archivedAt: true } });
  return { id: archived.id, archivedAt: archived.archivedAt! };
}

export interface UpdateSubmitterInput extends Pick<SubmitterInput, 'values' | 'fields' | 'readonly_fields' | 'message'> {
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
 * preferences; `completed: true` completes it (api_complete_form).
 * @throws AppError NOT_FOUND / FORBIDDEN; VALIDATION "Submitter has already completed the submission."
 *   or "... declined ...", and DocuSeal's messages for bad email/phone
 */
export async function updateSubmitter(
  deps: { db: Db; storage: FileStorage },
  actor: Actor,
  id: number,
  input: UpdateSubmitterInput,
  download: CreateSubmissionsOptions['download'],
): Promise<void> {
  const { db } = deps;
  const submitter = await findSubmitterForAccount(db, { id, accountId: actor.accountId });
  const submission = await db.submission.findUniqueOrThrow({ where: { id: submitter.submissionId }, select: { completedAt: true, templateFields: true } });
  if (submitter.completedAt || submission.completedAt) throw new AppError('VALIDATION', 'Submitter has already completed the submission.');
  if (submitter.declinedAt) throw new AppError('VALIDATION', 'Submitter has already declined the submission.');
  checkEmailAndPhone(input, 'submitter');
  if (input.replyTo && !isValidEmailList(input.replyTo)) throw new AppError('VALIDATION', 'reply_to email is invalid');

  const fields = parseFields(submission.templateFields);
  const own = fields.filter((f) => f.submitter_uuid === submitter.roleUuid);
  const staged: StagedFile[] = [];
  const { values, phone } = await applyPrefill(
    { download, staged },
    own,
    { values: input.values, fields: input.fields, readonly_fields: input.readonly_fields, phone: input.phone },
    'submitter',
    (submitter.values ?? {}) as Record<string, unknown>,
  );
  const preferences = { ...((submitter.preferences ?? {}) as Record<string, unknown>) };
  if (input.sendEmail !== undefined) preferences.send_email = input.sendEmail;
  if (input.sendSms !== undefined) preferences.send_sms = input.sendSms;
  if (input.replyTo !== undefined) preferences.reply_to = input.replyTo;
  if (input.completedRedirectUrl !== undefined) preferences.completed_redirect_url = input.completedRedirectUrl;
  if (input.message !== undefined) preferences.message = input.message;

  const now = new Date();
  await db.$transaction(async (tx) => {
    await tx.submission.update({ where: { id: submitter.submissionId }, data: { templateFields: fields as unknown as Prisma.InputJsonValue } });
    await tx.submitter.update({
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
    });
    if (input.completed) {
      await tx.submissionEvent.create({ data: { accountId: actor.accountId, submissionId: submitter.submissionId, submitterId: id, eventType: 'api_complete_form' } });
      const pending = await tx.submitter.count({ where: { submissionId: submitter.submissionId, completedAt: null } });
      if (pending === 0) await tx.submission.update({ where: { id: submitter.submissionId }, data: { completedAt: now } });
    }
  });
}
