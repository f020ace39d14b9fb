/**
 * The signer completes the form (docs/signing-form.md, completeSigningForm). In one transaction,
 * as PUT /submitters `completed: true` does (src/submissions/submission-actions.ts) but recording
 * `complete_form` with the signer's IP and user agent (reference/docuseal-behaviour.md §6): the
 * values, completed_at, ip and ua on the submitter, the event, and the submission's completed_at
 * when every party has completed; and in the same transaction, as the API path does
 * (src/submissions/submission-actions.ts): the completion pipeline's job (which raises
 * form.completed) and the requests of the next parties in order.
 *
 * Concurrency: the submission and submitter rows are locked (lockSignerForm) and completed_at is
 * set only where it is still empty, so of two completions at once exactly one succeeds.
 *
 * Conditions (src/templates/field-conditions.ts): a field whose conditions are not met is not
 * required and its value is not kept (DocuSeal's maybe_remove_condition_values).
 */
import { otherPartiesValues } from '../templates/field-conditions.ts';
import { AppError } from '../errors.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { completionJob } from '../signing/complete-submission.ts';
import { replaceTodayPlaceholders } from '../signing/format-values.ts';
import { nextPartyJobs } from '../submissions/send-requests.ts';
import { parseFields } from '../templates/fields.ts';
import { checkAttachments, checkSentValues, completionValues } from './field-values.ts';
import {
  formStarted,
  mergeValues,
  recordStart,
  trackingData,
  type SignerRequest,
  type SigningFormDeps,
} from './form-events.ts';
import { assertFormOpen, findSignerBySlug, FORM_STATE_MESSAGES, lockSignerForm, waitingForRole } from './form-state.ts';
import { buildSigningFormView, type SigningFormView } from './load-signing-form.ts';
import { assertConsented } from './signing-consent.ts';

/**
 * @param request.values optional values to save first (as saveSigningFormValues)
 * @throws AppError NOT_FOUND for an unknown slug; VALIDATION with DocuSeal's message when the
 *   form is not OPEN, "Waiting for <role> to complete the form." (order `preserved`, an earlier
 *   party has not completed); SigningFieldError VALIDATION (extensions.fieldUuid) for a field:
 *   the save errors, "<name> is required", the field's invalid message or "<name> is invalid",
 *   a required payment field; AppError VALIDATION CONSENT_REQUIRED_MESSAGE before the signer
 *   accepted the electronic-signature disclosure (signing-consent.ts)
 */
export async function completeSigningForm(
  deps: SigningFormDeps,
  request: SignerRequest & { values?: unknown },
): Promise<SigningFormView> {
  const { db } = deps;
  const found = await findSignerBySlug(db, request.slug);
  const now = new Date();
  assertFormOpen({ submitter: found, submission: found.submission }, now);

  const signer = await deps.effects.transaction(async (tx, effects) => {
    const signer = await lockSignerForm(tx, found);
    const form = { submitter: signer, submission: signer.submission };
    assertFormOpen(form, now);
    const waitingFor = waitingForRole(form);
    if (waitingFor) throw new AppError('VALIDATION', `Waiting for ${waitingFor} to complete the form.`);
    // Completing is signing: only once the signer agreed to sign electronically (signing-consent.ts).
    assertConsented(signer);

    const fields = parseFields(signer.submission.templateFields);
    const saved = (signer.values ?? {}) as Record<string, unknown>;
    const sent =
      request.values === undefined || request.values === null
        ? {}
        : checkSentValues(fields, signer.roleUuid, request.values);
    await checkAttachments(tx, signer, fields, sent, saved);
    // Conditions may name other parties' fields: judged over their values too (DocuSeal's).
    const others = otherPartiesValues(signer.submission.submitters, signer.id);
    const checked = completionValues(fields, signer.roleUuid, mergeValues(saved, sent), others);
    // `{{date}}` becomes the completion date in the account's time zone, as DocuSeal stores it.
    const { timezone } = await tx.account.findUniqueOrThrow({
      where: { id: signer.accountId },
      select: { timezone: true },
    });
    const values = replaceTodayPlaceholders(fields, checked, timezone, now);

    const started = await recordStart(tx, signer, request, now);
    const { count } = await tx.submitter.updateMany({
      where: { id: signer.id, completedAt: null, declinedAt: null },
      data: {
        values: values as Prisma.InputJsonValue,
        completedAt: now,
        openedAt: signer.openedAt ?? now,
        ip: request.ip ?? null,
        ua: request.userAgent ?? null,
      },
    });
    // Only a writer that does not take the locks (none today) could get here first.
    if (count !== 1) throw new AppError('VALIDATION', FORM_STATE_MESSAGES.COMPLETED);
    await tx.submissionEvent.create({
      data: {
        accountId: signer.accountId,
        submissionId: signer.submissionId,
        submitterId: signer.id,
        eventType: 'complete_form',
        eventTimestamp: now,
        data: trackingData(request),
      },
    });
    const pending = await tx.submitter.count({ where: { submissionId: signer.submissionId, completedAt: null } });
    if (pending === 0)
      await tx.submission.update({
        where: { id: signer.submissionId },
        data: { completedAt: now },
        select: { id: true },
      });
    if (started) effects.events.push(formStarted(signer, now));
    effects.jobs.push(completionJob(signer.submissionId, signer.id), ...(await nextPartyJobs(tx, signer.submissionId)));
    return {
      ...signer,
      values: values as Prisma.JsonValue,
      completedAt: now,
      openedAt: signer.openedAt ?? now,
      submission: { ...signer.submission, completedAt: pending === 0 ? now : signer.submission.completedAt },
    };
  });
  return buildSigningFormView(deps, signer, now);
}
