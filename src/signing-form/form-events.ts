/**
 * What the signing-form services share: their dependencies, the caller's IP and user agent
 * (recorded on view_form, start_form, complete_form and decline_form events, as DocuSeal's
 * `SubmissionEvents.create_with_tracking_data`; reference/docuseal-behaviour.md §6), and the
 * first-save bookkeeping (start_form once, §6).
 */
import type { DomainEvent, SideEffects } from '../events/events.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import type { LoadSigningFormDeps } from './load-signing-form.ts';

export interface SigningFormDeps extends LoadSigningFormDeps {
  /**
   * The form's changes and what they cause (form.viewed, form.started, form.declined; after a
   * completion, the completion pipeline and the next party's requests), in one transaction.
   */
  effects: SideEffects;
}

/** Who acts on a form: the slug (the capability) and where the request came from. */
export interface SignerRequest {
  slug: string;
  ip?: string | undefined;
  userAgent?: string | undefined;
}

/** form.started of a signer (once per signer: key `form.started:<id>`). */
export function formStarted(signer: { id: number; accountId: number }, at: Date): DomainEvent {
  return {
    type: 'form.started',
    accountId: signer.accountId,
    recordId: signer.id,
    at,
    key: `form.started:${signer.id}`,
  };
}

/** `{ip, ua}` for an event's data, leaving out what is unknown. */
export function trackingData(request: SignerRequest): Record<string, string> {
  return { ...(request.ip ? { ip: request.ip } : {}), ...(request.userAgent ? { ua: request.userAgent } : {}) };
}

/**
 * Marks the signer started (started_at) and records `start_form` the first time only; the
 * conditional update makes "first" hold across concurrent requests.
 * @returns true when this call started the form (the caller then emits form.started after commit)
 */
export async function recordStart(
  tx: Prisma.TransactionClient,
  signer: { id: number; accountId: number; submissionId: number },
  request: SignerRequest,
  now: Date,
): Promise<boolean> {
  const { count } = await tx.submitter.updateMany({
    where: { id: signer.id, startedAt: null },
    data: { startedAt: now },
  });
  if (count === 0) return false;
  await tx.submissionEvent.create({
    data: {
      accountId: signer.accountId,
      submissionId: signer.submissionId,
      submitterId: signer.id,
      eventType: 'start_form',
      eventTimestamp: now,
      data: trackingData(request),
    },
  });
  return true;
}

/** The saved values with the sent ones merged in; a sent null removes the value. */
export function mergeValues(saved: unknown, sent: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...((saved ?? {}) as Record<string, unknown>) };
  for (const [uuid, value] of Object.entries(sent)) {
    if (value === null) delete merged[uuid];
    else merged[uuid] = value;
  }
  return merged;
}
