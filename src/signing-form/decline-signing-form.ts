/**
 * The signer declines (docs/signing-form.md, declineSigningForm): declined_at, decline_reason, a
 * `decline_form` event with `{reason, ip, ua}` (reference/docuseal-behaviour.md §6),
 * form.declined, and the declined notice to the submission's creator (src/signing/declined-email.ts).
 * DocuSeal lets a signer decline whatever the order, so do we.
 */
import { declinedEmailJob } from '../signing/declined-email.ts';
import { checkText, MAX_LENGTH } from '../limits.ts';
import { trackingData, type SignerRequest, type SigningFormDeps } from './form-events.ts';
import { assertFormOpen, findSignerBySlug, lockSignerForm } from './form-state.ts';
import { buildSigningFormView, type SigningFormView } from './load-signing-form.ts';

/**
 * @param request.reason free text (trimmed; an empty one is stored as no reason, as DocuSeal accepts
 *   it), at most MAX_LENGTH.text characters (src/limits.ts)
 * @throws AppError NOT_FOUND for an unknown slug; VALIDATION with DocuSeal's message when the form
 *   is not OPEN, "reason is too long (maximum is 10000 characters)."
 */
export async function declineSigningForm(
  deps: SigningFormDeps,
  request: SignerRequest & { reason: string },
): Promise<SigningFormView> {
  const { db } = deps;
  checkText(request.reason, MAX_LENGTH.text, 'reason');
  const found = await findSignerBySlug(db, request.slug);
  const now = new Date();
  assertFormOpen({ submitter: found, submission: found.submission }, now);
  const reason = request.reason.trim();

  const signer = await deps.effects.transaction(async (tx, effects) => {
    const signer = await lockSignerForm(tx, found);
    assertFormOpen({ submitter: signer, submission: signer.submission }, now);
    await tx.submitter.update({
      where: { id: signer.id },
      data: { declinedAt: now, declineReason: reason || null },
      select: { id: true },
    });
    await tx.submissionEvent.create({
      data: {
        accountId: signer.accountId,
        submissionId: signer.submissionId,
        submitterId: signer.id,
        eventType: 'decline_form',
        eventTimestamp: now,
        data: { reason, ...trackingData(request) },
      },
    });
    effects.jobs.push(declinedEmailJob(signer.id));
    effects.events.push({
      type: 'form.declined',
      accountId: signer.accountId,
      recordId: signer.id,
      at: now,
      key: `form.declined:${signer.id}`,
    });
    return {
      ...signer,
      declinedAt: now,
      submission: {
        ...signer.submission,
        submitters: signer.submission.submitters.map((s) => (s.id === signer.id ? { ...s, declinedAt: now } : s)),
      },
    };
  });

  return buildSigningFormView(deps, signer, now);
}
