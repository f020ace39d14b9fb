/**
 * The signer accepts the electronic-signature disclosure (issue 24 §4; docs/signing-form.md
 * "Consent"): the page's `acceptSigningConsent` mutation. What the disclosure and its version are
 * is ./signing-consent.ts.
 */
import { AppError } from '../errors.ts';
import { matchLanguage } from '../i18n/languages.ts';
import { trackingData, type SignerRequest, type SigningFormDeps } from './form-events.ts';
import { assertFormOpen, findSignerBySlug, lockSignerForm } from './form-state.ts';
import { buildSigningFormView, type SigningFormView } from './load-signing-form.ts';
import { CONSENT_EVENT, consentDisclosure, latestAcceptance } from './signing-consent.ts';

const VERSION_PATTERN = /^(default|account)-([a-z]{2})-[0-9a-f]{12}$/;

/**
 * The signer accepts the disclosure of `version` (docs/signing-form.md "Consent"): a
 * `consent_accepted` event with the signer's IP and user agent, the version, its language and the
 * text's SHA-256, in the form's transaction (row locks, as every change of a form). Accepting the
 * version last accepted again records nothing.
 * @param request.version the version the signer was shown (SigningForm.consent.version)
 * @throws AppError NOT_FOUND for an unknown slug; VALIDATION with DocuSeal's message when the form
 *   is not OPEN; VALIDATION "Disclosure version … is not the current one …" for a version that
 *   names no current text (malformed, or the text changed since the page loaded it)
 */
export async function acceptSigningConsent(
  deps: SigningFormDeps,
  request: SignerRequest & { version: string },
): Promise<SigningFormView> {
  const found = await findSignerBySlug(deps.db, request.slug);
  const now = new Date();
  assertFormOpen({ submitter: found, submission: found.submission }, now);
  const signer = await deps.effects.transaction(async (tx) => {
    const signer = await lockSignerForm(tx, found);
    assertFormOpen({ submitter: signer, submission: signer.submission }, now);
    const match = VERSION_PATTERN.exec(request.version);
    const language = match ? matchLanguage(match[2]) : undefined;
    const disclosure = language ? consentDisclosure(signer.submission.account, language) : undefined;
    if (!disclosure || disclosure.version !== request.version)
      throw new AppError(
        'VALIDATION',
        `Disclosure version "${request.version.slice(0, 64)}" is not the current one: load the form again and ` +
          'accept the disclosure it shows.',
      );
    if (latestAcceptance(signer)?.version === disclosure.version) return signer;
    const data = {
      ...trackingData(request),
      version: disclosure.version,
      language: disclosure.language,
      sha256: disclosure.sha256,
    };
    await tx.submissionEvent.create({
      data: {
        accountId: signer.accountId,
        submissionId: signer.submissionId,
        submitterId: signer.id,
        eventType: CONSENT_EVENT,
        eventTimestamp: now,
        data,
      },
    });
    return { ...signer, events: [{ eventTimestamp: now, data }] };
  });
  return buildSigningFormView(deps, signer, now);
}
