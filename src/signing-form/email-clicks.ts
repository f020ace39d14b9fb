/**
 * "Email link clicked": the signing link in a request email carries a short tag `t` (DocuSeal's
 * `SubmissionEvents.build_tracking_param(submitter, 'click_email')`, lib/submission_events.rb), and
 * the signing page, loaded with it, posts `POST /api/submitter_email_clicks {submitter_slug, t}`
 * (app/controllers/api/submitter_email_clicks_controller.rb, app/javascript/submission_form/form.vue):
 * a `click_email` submission event with the signer's IP and user agent when the tag is the
 * submitter's, nothing otherwise; the answer is `{}` either way, 404 for an unknown slug.
 *
 * The tag is made with the link, by src/submissions/signing-links.ts. The page posts from the
 * browser, as DocuSeal's does, so a mail scanner fetching the link without running scripts does
 * not count as a click.
 */
import { findSignerBySlug } from './form-state.ts';
import { trackingData, type SignerRequest, type SigningFormDeps } from './form-events.ts';
import type { EmailClickTags } from '../submissions/signing-links.ts';

/**
 * Records a click of a request email's link (module comment).
 * @returns true when a `click_email` event was recorded
 * @throws AppError NOT_FOUND for an unknown slug
 */
export async function recordEmailClick(
  deps: Pick<SigningFormDeps, 'db'> & { emailClicks: EmailClickTags },
  request: SignerRequest & { t: string },
): Promise<boolean> {
  const signer = await findSignerBySlug(deps.db, request.slug);
  if (!request.t || !deps.emailClicks.matches(signer.slug, request.t)) return false;
  await deps.db.submissionEvent.create({
    data: {
      accountId: signer.accountId,
      submissionId: signer.submissionId,
      submitterId: signer.id,
      eventType: 'click_email',
      eventTimestamp: new Date(),
      data: trackingData(request),
    },
    select: { id: true },
  });
  return true;
}
