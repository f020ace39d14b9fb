/**
 * Whether a signer's form can still be filled, and DocuSeal's words when it cannot
 * (reference/docuseal-behaviour.md §3: "Form has been archived." / "expired." / "declined." /
 * "completed already."; `app/controllers/submit_form_controller.rb`). Also the signer found by
 * slug (the capability of the form, DESIGN.md "Security model") and the row locks every change of
 * a form takes.
 */
import type { Db } from '../db/client.ts';
import { lockSubmissionAndSubmitter } from '../db/queries/signing-form.ts';
import { AppError } from '../errors.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { parseRoles } from '../templates/fields.ts';
import type { SigningFormState } from './view-types.ts';

export type { SigningFormState };

/** DocuSeal's message for each state a form cannot be changed in. */
export const FORM_STATE_MESSAGES: Record<Exclude<SigningFormState, 'OPEN'>, string> = {
  COMPLETED: 'Form has been completed already.',
  DECLINED: 'Form has been declined.',
  ARCHIVED: 'Form has been archived.',
  EXPIRED: 'Form has been expired.',
};

/** What the state is computed from: the signer, its submission (with every party) and the template. */
export interface FormStateInput {
  submitter: { id: number; roleUuid: string; orderIndex: number; completedAt: Date | null; declinedAt: Date | null };
  submission: {
    completedAt: Date | null;
    archivedAt: Date | null;
    expireAt: Date | null;
    submittersOrder: string;
    templateSubmitters: unknown;
    template: { archivedAt: Date | null } | null;
    submitters: {
      id: number;
      roleUuid: string;
      orderIndex: number;
      completedAt: Date | null;
      declinedAt: Date | null;
    }[];
  };
}

/**
 * The form's state, first match wins: COMPLETED (this signer or the whole submission), DECLINED
 * (any party declined: the submission's status is then `declined`, §5.1, and nobody can finish
 * it), ARCHIVED (the submission or its template), EXPIRED (`expire_at` at or before `now`; the
 * expiry job changes nothing that this does not already see, src/submissions/send-requests.ts).
 */
export function formStateOf(input: FormStateInput, now = new Date()): SigningFormState {
  const { submitter, submission } = input;
  if (submitter.completedAt || submission.completedAt) return 'COMPLETED';
  if (submitter.declinedAt || submission.submitters.some((s) => s.declinedAt)) return 'DECLINED';
  if (submission.archivedAt || submission.template?.archivedAt) return 'ARCHIVED';
  if (submission.expireAt && submission.expireAt.getTime() <= now.getTime()) return 'EXPIRED';
  return 'OPEN';
}

/** DocuSeal's message for a state, null for OPEN. */
export function formStateMessage(state: SigningFormState): string | null {
  return state === 'OPEN' ? null : FORM_STATE_MESSAGES[state];
}

/**
 * With order `preserved`: the role name of the first earlier party (lower order group, then id)
 * that has not completed, else null. `random` submissions never wait.
 */
export function waitingForRole(input: FormStateInput): string | null {
  const { submitter, submission } = input;
  if (submission.submittersOrder !== 'preserved') return null;
  const earlier = submission.submitters
    .filter((s) => s.id !== submitter.id && s.orderIndex < submitter.orderIndex && !s.completedAt)
    .sort((a, b) => a.orderIndex - b.orderIndex || a.id - b.id)[0];
  if (!earlier) return null;
  return parseRoles(submission.templateSubmitters).find((r) => r.uuid === earlier.roleUuid)?.name ?? 'another party';
}

/**
 * Refuses a change of a form that is not OPEN, with DocuSeal's message.
 * @throws AppError VALIDATION (422)
 */
export function assertFormOpen(input: FormStateInput, now = new Date()): void {
  const state = formStateOf(input, now);
  if (state !== 'OPEN') throw new AppError('VALIDATION', FORM_STATE_MESSAGES[state]);
}

const formSelect = {
  id: true,
  uuid: true,
  accountId: true,
  submissionId: true,
  roleUuid: true,
  slug: true,
  email: true,
  name: true,
  phone: true,
  values: true,
  preferences: true,
  // The signer's language and the account's texts: the consent disclosure (signing-consent.ts).
  language: true,
  metadata: true,
  orderIndex: true,
  sentAt: true,
  openedAt: true,
  startedAt: true,
  completedAt: true,
  declinedAt: true,
  submission: {
    select: {
      id: true,
      accountId: true,
      name: true,
      submittersOrder: true,
      templateSubmitters: true,
      templateFields: true,
      templateSchema: true,
      preferences: true,
      expireAt: true,
      completedAt: true,
      archivedAt: true,
      language: true,
      account: { select: { name: true, preferences: true } },
      template: { select: { archivedAt: true, name: true } },
      submitters: {
        select: { id: true, roleUuid: true, orderIndex: true, values: true, completedAt: true, declinedAt: true },
        orderBy: { id: 'asc' },
      },
    },
  },
  // The signer's latest acceptance of the electronic-signature disclosure (signing-consent.ts).
  events: {
    where: { eventType: 'consent_accepted' },
    orderBy: [{ eventTimestamp: 'desc' }, { id: 'desc' }],
    take: 1,
    select: { eventTimestamp: true, data: true },
  },
} satisfies Prisma.SubmitterSelect;

/** A signer with everything its form is built from (one query). */
export type SignerForm = Prisma.SubmitterGetPayload<{ select: typeof formSelect }>;

/** Slugs are generated as 14 url-safe characters; anything far off that is not worth a query. */
const SLUG_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The signer whose slug this is, with its submission, every party and the template's archive
 * state.
 * @throws AppError NOT_FOUND (404) for an unknown slug
 */
export async function findSignerBySlug(db: Db | Prisma.TransactionClient, slug: string): Promise<SignerForm> {
  const submitter = SLUG_PATTERN.test(slug)
    ? await db.submitter.findUnique({ where: { slug }, select: formSelect })
    : null;
  if (!submitter) throw new AppError('NOT_FOUND', 'Submitter not found');
  return submitter;
}

/**
 * Inside a transaction: locks the submission row, then the signer's (always in that order, as
 * the API's PUT /submitters writes them, so the two never deadlock), and reads the signer again.
 * Changes of one form run one after another: of two completions at once, the second sees the
 * first's completed_at and is refused.
 */
export async function lockSignerForm(
  tx: Prisma.TransactionClient,
  signer: { id: number; submissionId: number },
): Promise<SignerForm> {
  await lockSubmissionAndSubmitter(tx, { submissionId: signer.submissionId, submitterId: signer.id });
  return tx.submitter.findUniqueOrThrow({ where: { id: signer.id }, select: formSelect });
}
