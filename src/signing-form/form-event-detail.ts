/**
 * The `detail` of the embedded signing form's `load`, `completed` and `declined` events
 * (docs/embedding.md): the submitter as DocuSeal's form.* webhooks carry it (formSubmitterData,
 * src/docuseal-shapes/webhook-data.ts, from the same read model the webhooks load), as the form is
 * when the page asks. DocuSeal's embedded form hands its callbacks the submitter's JSON as its
 * server answers the form (form.vue `onComplete(JSON.parse(respData))`); the webhook `data` is
 * that submitter's one DocuSeal shape, so an integration reads the same keys in both.
 *
 * The slug is the capability: whoever holds it already reads the form (fields, values, documents,
 * signed copies); this adds the submitter's keys of the webhook `data` (ids, external_id,
 * metadata, ip/ua, the submission's and template's ids and names) — docs/security.md "Embedding".
 */
import { formSubmitterData } from '../docuseal-shapes/webhook-data.ts';
import { AppError } from '../errors.ts';
import { loadFormSubmitterReadModels } from '../submissions/read-models.ts';
import type { LoadSigningFormDeps } from './load-signing-form.ts';

/**
 * The form.* webhook `data` of the submitter with this slug.
 * @param deps.appUrl APP_URL, for `submission_url`
 * @throws AppError NOT_FOUND for an unknown slug
 */
export async function loadFormEventDetail(
  deps: LoadSigningFormDeps & { appUrl: string },
  slug: string,
): Promise<Record<string, unknown>> {
  const submitter = await deps.db.submitter.findUnique({
    where: { slug },
    select: { id: true, accountId: true, ip: true, ua: true, declineReason: true },
  });
  const [model] = submitter
    ? await loadFormSubmitterReadModels(deps, { accountId: submitter.accountId, ids: [submitter.id] })
    : [];
  if (!submitter || !model) throw new AppError('NOT_FOUND', 'Submitter not found');
  return formSubmitterData(model, submitter, deps.appUrl);
}
