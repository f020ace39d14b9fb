/**
 * The signer opened the form (the page calls this on every load; also
 * POST /api/submitter_form_views): a `view_form` event with IP and user agent, opened_at set on
 * every open as DocuSeal does (reference/docuseal-behaviour.md §1.1), and form.viewed on the
 * first open only (DESIGN.md; the interface spec says "first opens").
 */
import { formStateOf, findSignerBySlug, lockSignerForm } from './form-state.ts';
import { trackingData, type SignerRequest, type SigningFormDeps } from './form-events.ts';
import { buildSigningFormView, type SigningFormView } from './load-signing-form.ts';

/**
 * Records the open and returns the form. Nothing is recorded when the form is not OPEN
 * (completed, declined, archived, expired): the form is returned as it is.
 * @throws AppError NOT_FOUND for an unknown slug
 */
export async function openSigningForm(deps: SigningFormDeps, request: SignerRequest): Promise<SigningFormView> {
  const { db } = deps;
  const found = await findSignerBySlug(db, request.slug);
  const now = new Date();
  if (formStateOf({ submitter: found, submission: found.submission }, now) !== 'OPEN')
    return buildSigningFormView(deps, found, now);

  let openedBefore = found.openedAt !== null;
  const signer = await deps.effects.transaction(async (tx, effects) => {
    const signer = await lockSignerForm(tx, found);
    openedBefore = signer.openedAt !== null;
    if (formStateOf({ submitter: signer, submission: signer.submission }, now) !== 'OPEN') return signer;
    // Under the row lock, so of two first opens at once only one sees no earlier view.
    const earlierViews = await tx.submissionEvent.count({ where: { submitterId: signer.id, eventType: 'view_form' } });
    await tx.submissionEvent.create({
      data: {
        accountId: signer.accountId,
        submissionId: signer.submissionId,
        submitterId: signer.id,
        eventType: 'view_form',
        eventTimestamp: now,
        data: trackingData(request),
      },
    });
    await tx.submitter.update({ where: { id: signer.id }, data: { openedAt: now }, select: { id: true } });
    if (earlierViews === 0)
      effects.events.push({
        type: 'form.viewed',
        accountId: signer.accountId,
        recordId: signer.id,
        at: now,
        key: `form.viewed:${signer.id}`,
      });
    return { ...signer, openedAt: now };
  });
  // As DocuSeal renders the form before the page records the view: did the signer open it before?
  return buildSigningFormView(deps, signer, now, { openedBefore });
}
