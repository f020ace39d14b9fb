/**
 * Saving values as the signer goes (docs/signing-form.md, saveSigningFormValues): merged into
 * the saved ones; the first save records `start_form` and emits form.started, and sets
 * opened_at if it is still empty (reference/docuseal-behaviour.md §6). Required fields and
 * patterns are checked on completion only: the signer is still typing.
 */
import { parseFields } from '../templates/fields.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { checkValuesSize } from '../limits.ts';
import { checkAttachments, checkSentValues } from './field-values.ts';
import { formStarted, mergeValues, recordStart, type SignerRequest, type SigningFormDeps } from './form-events.ts';
import { assertFormOpen, findSignerBySlug, lockSignerForm } from './form-state.ts';
import { buildSigningFormView, type SigningFormView } from './load-signing-form.ts';
import { assertConsented } from './signing-consent.ts';

/** The field types whose value is the signer's signature (signing-consent.ts). */
const SIGNING_TYPES: ReadonlySet<string> = new Set(['signature', 'initials']);

/**
 * @param request.values field uuid → value (null clears one)
 * @throws AppError NOT_FOUND for an unknown slug; VALIDATION "Form has been completed already." /
 *   "declined." / "archived." / "expired."; SigningFieldError VALIDATION "Missing field" /
 *   "Invalid field" / "Read-only field", a value of the wrong kind or too long, an attachment not
 *   this signer's; AppError VALIDATION when the values together are too large (src/limits.ts);
 *   AppError VALIDATION CONSENT_REQUIRED_MESSAGE for a signature or initials value before the
 *   signer accepted the electronic-signature disclosure (signing-consent.ts)
 */
export async function saveSigningFormValues(
  deps: SigningFormDeps,
  request: SignerRequest & { values: unknown },
): Promise<SigningFormView> {
  const { db } = deps;
  const found = await findSignerBySlug(db, request.slug);
  const now = new Date();
  assertFormOpen({ submitter: found, submission: found.submission }, now);

  const signer = await deps.effects.transaction(async (tx, effects) => {
    const signer = await lockSignerForm(tx, found);
    assertFormOpen({ submitter: signer, submission: signer.submission }, now);
    const fields = parseFields(signer.submission.templateFields);
    const sent = checkSentValues(fields, signer.roleUuid, request.values);
    // A signature or initials is given only after the signer agreed to sign electronically.
    if (fields.some((f) => SIGNING_TYPES.has(f.type) && sent[f.uuid] !== undefined && sent[f.uuid] !== null))
      assertConsented(signer);
    await checkAttachments(tx, signer, fields, sent, (signer.values ?? {}) as Record<string, unknown>);
    if (Object.keys(sent).length === 0) return signer;
    const values = mergeValues(signer.values, sent);
    checkValuesSize(values);
    const started = await recordStart(tx, signer, request, now);
    const openedAt = signer.openedAt ?? now;
    await tx.submitter.update({
      where: { id: signer.id },
      data: { values: values as Prisma.InputJsonValue, openedAt },
      select: { id: true },
    });
    if (started) effects.events.push(formStarted(signer, now));
    return { ...signer, values: values as Prisma.JsonValue, openedAt };
  });
  return buildSigningFormView(deps, signer, now);
}
