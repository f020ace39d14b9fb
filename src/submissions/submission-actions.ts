/**
 * Changing submissions and submitters: PUT /submissions/{id} (name, expire_at, archived; §7.7),
 * DELETE /submissions/{id} (archive, or with `permanently` delete; §7.8), PUT /submitters/{id} (§8). Each change is one
 * transaction with what it causes (an expiry job, submission.archived, a completion, requests):
 * the outbox, src/jobs/outbox.ts.
 */
import type { KeyFolders } from '../accounts/key-scopes.ts';
import type { Db } from '../db/client.ts';
import type { SideEffects } from '../events/events.ts';
import { completionJob } from '../signing/complete-submission.ts';
import { expiryJobs, nextPartyJobs, requestJobs } from './send-requests.ts';
import { armSubmissionReminders, restartReminders } from './reminders.ts';
import type { Reminders } from '../notifications/reminder-settings.ts';
import type { Clock } from '../util/clock.ts';
import type { FileStorage } from '../documents/storage.ts';
import { AppError } from '../errors.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { replaceTodayPlaceholders } from '../signing/format-values.ts';
import { parseFields, type Field } from '../templates/fields.ts';
import { dropHiddenValues, otherPartiesValues } from '../templates/field-conditions.ts';
import {
  applyPrefill,
  storeStagedFiles,
  type CreateSubmissionsOptions,
  type StagedFile,
} from './create-submissions.ts';
import { DELETE_TRANSACTION, deleteRecordsPermanently } from '../templates/delete-records.ts';
import { findSubmissionForAccount, findSubmitterForAccount } from './find.ts';
import { parseInput } from '../accounts/api-keys.ts';
import { storedLanguage } from '../i18n/signer-language.ts';
import { checkText, MAX_LENGTH } from '../limits.ts';
import type { z } from 'zod';
import {
  checkEmailAndPhone,
  isValidEmailList,
  refuseTwoFactor,
  SubmitterChanges,
  type UpdateSubmitterRequest,
} from './submitter-input.ts';

interface Actor {
  accountId: number;
  userId: number;
  /** The folders the caller's key is limited to (src/accounts/key-scopes.ts); null or absent: every folder. */
  folders?: KeyFolders | null | undefined;
}

/**
 * What the changes below need: the database, the transaction that records their effects, and the
 * clock reminders are judged by (src/util/clock.ts).
 */
export interface ChangeDeps {
  db: Db;
  effects: Pick<SideEffects, 'transaction'>;
  clock: Clock;
}

/**
 * Updates a submission's name, expiry, archive state or reminder settings; a new expiry schedules
 * its job, and submission.archived is raised when this call archived it (reference §7.7: when
 * newly archived). New reminder settings, a new expiry or a restore have the next reminder scan
 * judge its parties' reminders again (src/submissions/reminders.ts).
 * @param changes `expireAt: null` clears the expiry; `archived` true archives (keeping an earlier time), false
 *   restores; `reminders` (checked) replace the submission's own settings; `language` (a code of
 *   src/i18n/languages.ts, null: none) is its parties' language when they have none of their own
 * @returns `archived`: whether this call archived it (it was not archived before)
 * @throws AppError NOT_FOUND / FORBIDDEN; VALIDATION "name is too long (maximum is 255 characters)."
 */
export async function updateSubmission(
  deps: ChangeDeps,
  actor: Actor,
  id: number,
  changes: {
    name?: string | null;
    expireAt?: Date | null;
    archived?: boolean;
    reminders?: Reminders;
    language?: string | null;
  },
): Promise<{ archived: boolean }> {
  checkText(changes.name, MAX_LENGTH.name, 'name');
  const submission = await findSubmissionForAccount(deps.db, {
    id,
    accountId: actor.accountId,
    folders: actor.folders,
  });
  const now = new Date();
  const data: Prisma.SubmissionUpdateInput = { updatedAt: now };
  if (changes.name !== undefined) data.name = changes.name;
  if (changes.expireAt !== undefined) data.expireAt = changes.expireAt;
  if (changes.language !== undefined) data.language = changes.language;
  if (changes.archived === true && !submission.archivedAt) data.archivedAt = now;
  if (changes.archived === false) data.archivedAt = null;
  const archived = data.archivedAt instanceof Date;
  await deps.effects.transaction(async (tx, effects) => {
    if (changes.reminders) {
      // Beside the other stored preferences (set at creation only, so no change of theirs is lost).
      const { preferences } = await tx.submission.findUniqueOrThrow({ where: { id }, select: { preferences: true } });
      const stored = (preferences ?? {}) as Record<string, unknown>;
      data.preferences = { ...stored, reminders: changes.reminders } as unknown as Prisma.InputJsonValue;
    }
    await tx.submission.update({ where: { id }, data, select: { id: true } });
    effects.jobs.push(...expiryJobs(id, changes.expireAt));
    if (changes.reminders || changes.expireAt !== undefined || changes.archived === false)
      await armSubmissionReminders(tx, { accountId: actor.accountId, id }, deps.clock.now());
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
  await findSubmissionForAccount(deps.db, { id, accountId: actor.accountId, folders: actor.folders });
  const now = new Date();
  await deps.effects.transaction(async (tx, effects) => {
    await tx.submission.update({ where: { id }, data: { archivedAt: now }, select: { id: true } });
    effects.events.push({ type: 'submission.archived', accountId: actor.accountId, recordId: id, at: now });
  });
  return { id, archivedAt: now };
}

/**
 * Deletes a submission permanently (DELETE /submissions/{id}?permanently=true, §7.8; DocuSeal's
 * `@submission.destroy!`): with its submitters, events, completed documents and messages, the
 * webhook deliveries of its events, and the stored files only it used (their bytes removed by a
 * job after the commit): src/templates/delete-records.ts. No event is raised.
 * @returns its id and `archivedAt` as it had them (null when it was not archived), DocuSeal's answer
 * @throws AppError NOT_FOUND / FORBIDDEN
 */
export async function deleteSubmission(
  deps: ChangeDeps,
  actor: Actor,
  id: number,
): Promise<{ id: number; archivedAt: Date | null }> {
  return deps.effects.transaction(async (tx, effects) => {
    const submission = await findSubmissionForAccount(tx, { id, accountId: actor.accountId, folders: actor.folders });
    await deleteRecordsPermanently(tx, effects, { accountId: actor.accountId, templateId: null, submissionIds: [id] });
    return { id, archivedAt: submission.archivedAt };
  }, DELETE_TRANSACTION);
}

/** A submitter's changes (UpdateSubmitterRequest without its id), in DocuSeal's keys, not yet checked. */
export type UpdateSubmitterInput = Omit<z.input<typeof UpdateSubmitterRequest>, 'id'>;

/**
 * Updates a submitter as DocuSeal's Api::SubmittersController#update does
 * (app/controllers/api/submitters_controller.rb: assign_submitter_attrs, assign_preferences;
 * lib/submissions/create_from_submitters.rb maybe_set_template_fields): contact data; values
 * merged into the existing ones (and the fields' defaults in the submission's copy); `fields` and
 * `readonly_fields` change that copy; `metadata` replaces the stored one; `external_id`;
 * preferences `send_email`, `send_sms`, `reply_to`, `completed_redirect_url`, `go_to_last`,
 * `require_phone_2fa`/`require_email_2fa` (false only) and `message` (the next request email's
 * subject and body); `language` (Signet's: the party's language, "" removes it). `completed: true`
 * completes it (api_complete_form; the values of fields whose conditions are not met are dropped,
 * required fields are not enforced, as DocuSeal), with the completion
 * pipeline's job and the next parties' requests; otherwise `send_email`/`send_sms` true sends the
 * request again (a new sending, not deduplicated away). A changed email or phone starts the party's
 * reminders again (restartReminders). Nothing is written when a check fails.
 * @throws AppError NOT_FOUND / FORBIDDEN; VALIDATION "Submitter has already completed the submission."
 *   or "... declined ...", DocuSeal's messages for bad email/phone, "require_email_2fa is not
 *   supported: the signing form has no one-time codes" (Signet's form cannot verify a code; docs/compatibility.md),
 *   and sizes over src/limits.ts ("name is too long (maximum is 255 characters).", "values.Comment is too long …")
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
  const changes = parseInput(SubmitterChanges, input);
  // As on create (§7.1): a subject needs a body.
  if (changes.message?.subject && !changes.message.body)
    throw new AppError('VALIDATION', 'body is required in `message`.');
  const submitter = await findSubmitterForAccount(db, { id, accountId: actor.accountId, folders: actor.folders });
  const submission = await db.submission.findUniqueOrThrow({
    where: { id: submitter.submissionId },
    select: { completedAt: true, templateFields: true },
  });
  if (submitter.completedAt || submission.completedAt)
    throw new AppError('VALIDATION', 'Submitter has already completed the submission.');
  if (submitter.declinedAt) throw new AppError('VALIDATION', 'Submitter has already declined the submission.');
  checkEmailAndPhone(changes, 'submitter');
  refuseTwoFactor(input);
  if (changes.reply_to && !isValidEmailList(changes.reply_to))
    throw new AppError('VALIDATION', 'reply_to email is invalid');

  const fields = parseFields(submission.templateFields);
  const own = fields.filter((f) => f.submitter_uuid === submitter.roleUuid);
  const staged: StagedFile[] = [];
  const { values, phone } = await applyPrefill(
    { download, images, accountId: actor.accountId, staged },
    own,
    { values: changes.values, fields: changes.fields, readonly_fields: changes.readonly_fields, phone: changes.phone },
    'submitter',
    (submitter.values ?? {}) as Record<string, unknown>,
  );
  // Completing drops the values of fields whose conditions are not met (DocuSeal's
  // maybe_remove_condition_values), judged over the other parties' values too.
  const kept = input.completed
    ? dropHiddenValues(
        fields,
        submitter.roleUuid,
        values,
        otherPartiesValues(
          await db.submitter.findMany({
            where: { submissionId: submitter.submissionId },
            select: { id: true, values: true },
            orderBy: { id: 'asc' },
          }),
          id,
        ),
      )
    : values;
  const preferences = { ...((submitter.preferences ?? {}) as Record<string, unknown>) };
  if (input.send_email !== undefined) preferences.send_email = input.send_email;
  if (input.send_sms !== undefined) preferences.send_sms = input.send_sms;
  if (changes.reply_to !== undefined) preferences.reply_to = changes.reply_to;
  if (changes.completed_redirect_url !== undefined) preferences.completed_redirect_url = changes.completed_redirect_url;
  if (input.go_to_last !== undefined) preferences.go_to_last = input.go_to_last;
  if (input.require_phone_2fa !== undefined) preferences.require_phone_2fa = input.require_phone_2fa;
  if (input.require_email_2fa !== undefined) preferences.require_email_2fa = input.require_email_2fa;
  // An empty message ({}) changes nothing (as DocuSeal's REST reads it).
  if (changes.message?.subject !== undefined || changes.message?.body !== undefined)
    preferences.message = changes.message;

  const now = new Date();
  await deps.effects.transaction(async (tx, effects) => {
    await tx.submission.update({
      where: { id: submitter.submissionId },
      data: { templateFields: fields as unknown as Prisma.InputJsonValue },
    });
    const updated = await tx.submitter.update({
      where: { id },
      data: {
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        // A blank email or phone clears it (DocuSeal: `Submissions.normalize_email("")` is nil).
        ...(changes.email !== undefined ? { email: changes.email.trim().toLowerCase() || null } : {}),
        ...(phone !== null ? { phone } : changes.phone?.trim() === '' ? { phone: null } : {}),
        ...(changes.external_id !== undefined ? { externalId: changes.external_id } : {}),
        ...(changes.metadata !== undefined ? { metadata: changes.metadata as Prisma.InputJsonValue } : {}),
        ...(changes.language !== undefined ? { language: storedLanguage(changes.language) } : {}),
        values: (await storeStagedFiles(
          tx,
          deps.storage,
          actor.accountId,
          staged,
          input.completed ? await withCompletionDates(tx, actor.accountId, fields, kept, now) : kept,
        )) as Prisma.InputJsonValue,
        preferences: preferences as Prisma.InputJsonValue,
        ...(input.completed ? { completedAt: now } : {}),
      },
      select: { id: true, email: true, phone: true },
    });
    // A new address starts the party's reminders again (src/submissions/reminders.ts).
    if (updated.email !== submitter.email || updated.phone !== submitter.phone)
      await restartReminders(tx, id, deps.clock.now());
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
    } else if (input.send_email === true || input.send_sms === true) {
      const sends = await tx.submissionEvent.count({
        where: { submitterId: id, eventType: { in: ['send_email', 'send_sms'] } },
      });
      const channels = { ...preferences, send_email: input.send_email === true, send_sms: input.send_sms === true };
      effects.jobs.push(...requestJobs([{ ...updated, preferences: channels }], sends + 1));
    }
  });
}

/**
 * `{{date}}` values become the completion date in the account's time zone (DocuSeal's
 * replace_current_date_placeholders; src/signing/format-values.ts replaceTodayPlaceholders).
 */
async function withCompletionDates(
  tx: Prisma.TransactionClient,
  accountId: number,
  fields: Field[],
  values: Record<string, unknown>,
  now: Date,
): Promise<Record<string, unknown>> {
  const { timezone } = await tx.account.findUniqueOrThrow({ where: { id: accountId }, select: { timezone: true } });
  return replaceTodayPlaceholders(fields, values, timezone, now);
}
