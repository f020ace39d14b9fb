/**
 * What the signing page shows (docs/signing-form.md, `SigningForm`): the signer, the submission's
 * own copy of the documents, roles and fields (submissions.template_*), this signer's fields with
 * their current values, other parties' completed values (read-only), and signed URLs for every
 * file it names. Reading a form records nothing. Fields' conditions: pageConditions.
 */
import { otherPartiesValues } from '../templates/field-conditions.ts';
import type { Db } from '../db/client.ts';
import type { FileUrlSigner } from '../documents/file-urls.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { submissionStatus, submitterStatus } from '../submissions/status.ts';
import { parseFields, parseRoles, type Area, type Field } from '../templates/fields.ts';
import { findSignerBySlug, formStateMessage, formStateOf, waitingForRole, type SignerForm } from './form-state.ts';
import {
  evaluateConditions,
  foldConditions,
  type ConditionEvaluator,
  type FieldCondition,
} from '../templates/field-conditions.ts';
import { hasValue, SINGLE_ATTACHMENT_TYPES } from './field-values.ts';
import { signingFormConsent } from './signing-consent.ts';
import type { SigningFormFieldOf, SigningFormViewOf } from './view-types.ts';

export type { SigningFormAttachment, SigningFormDocument } from './view-types.ts';

/** A field of the view as the server builds it: stored areas (templates/fields.ts). */
export type SigningFormField = SigningFormFieldOf<Area>;

/** The view as the server builds it (view-types.ts): times as Dates, stored areas. */
export type SigningFormView = SigningFormViewOf<Date, Area>;

/** The signer each view was built from, for consentIn (no second query). */
const viewSigners = new WeakMap<SigningFormView, SignerForm>();

/**
 * The view's `consent` in another language than the signer's stored one (the page asks in its
 * own: SigningForm.consent(language)); the view's own `consent` for a view not built here.
 */
export function consentIn(view: SigningFormView, language: string): SigningFormView['consent'] {
  const signer = viewSigners.get(view);
  return signer ? signingFormConsent(signer, language) : view.consent;
}

export interface LoadSigningFormDeps {
  db: Db;
  /** Mints the `/file/...` URLs (ctx.files). */
  files: Pick<FileUrlSigner, 'url'>;
}

/**
 * The form of the signer with this slug.
 * @param options.now the time expiry is judged at (default now)
 * @throws AppError NOT_FOUND (404) for an unknown slug
 */
export async function loadSigningForm(
  deps: LoadSigningFormDeps,
  options: { slug: string; now?: Date },
): Promise<SigningFormView> {
  const signer = await findSignerBySlug(deps.db, options.slug);
  return buildSigningFormView(deps, signer, options.now);
}

/**
 * The view of an already loaded signer (after a change, from the row the change read back).
 * @param options.openedBefore whether the signer had opened the form before this view (default:
 *   its opened_at is set); goToLast follows it unless the submitter has a `go_to_last` preference
 */
export async function buildSigningFormView(
  deps: LoadSigningFormDeps,
  signer: SignerForm,
  now = new Date(),
  options: { openedBefore?: boolean } = {},
): Promise<SigningFormView> {
  const { db, files } = deps;
  const { submission } = signer;
  const roles = parseRoles(submission.templateSubmitters);
  const allFields = parseFields(submission.templateFields);
  const roleName = (uuid: string) => roles.find((r) => r.uuid === uuid)?.name ?? '';
  const state = formStateOf({ submitter: signer, submission }, now);

  // This signer's fields, then the values other parties completed with.
  const ownValues = (signer.values ?? {}) as Record<string, unknown>;
  const completedValues = new Map<string, Record<string, unknown>>();
  for (const party of submission.submitters) {
    if (party.id !== signer.id && party.completedAt)
      completedValues.set(party.roleUuid, (party.values ?? {}) as Record<string, unknown>);
  }
  const shown: { field: Field; own: boolean; value: unknown; conditions: FieldCondition[] | null }[] = [];
  const formConditions = pageConditions(allFields, signer, ownValues);
  for (const field of allFields) {
    if (field.submitter_uuid === signer.roleUuid) {
      const conditions = formConditions(field);
      if (conditions === 'hidden') continue;
      shown.push({ field, own: true, value: ownValues[field.uuid] ?? field.default_value ?? null, conditions });
      continue;
    }
    const value = completedValues.get(field.submitter_uuid)?.[field.uuid];
    if (hasValue(field, value)) shown.push({ field, own: false, value, conditions: null });
  }

  // Every stored file the page needs, in one query each: documents, attachments, results.
  const schema = submission.templateSchema as { attachment_uuid: string; name: string; file_id: number }[];
  const attachmentUuids = shown.flatMap(({ field, value }) => attachmentUuidsOf(field, value));
  const [documentFiles, attachmentFiles, completedDocuments] = await Promise.all([
    db.storedFile.findMany({
      where: { id: { in: schema.map((d) => d.file_id) } },
      select: { id: true, uuid: true, filename: true, pages: true },
    }),
    attachmentUuids.length
      ? db.storedFile.findMany({
          where: { uuid: { in: [...new Set(attachmentUuids)] }, accountId: signer.accountId },
          select: { uuid: true, filename: true, contentType: true },
        })
      : Promise.resolve([]),
    submission.completedAt ? resultDocuments(db, submission.id) : Promise.resolve([]),
  ]);

  const preferences = (signer.preferences ?? {}) as { completed_redirect_url?: unknown; go_to_last?: unknown };
  const submissionPreferences = (submission.preferences ?? {}) as { completed_redirect_url?: unknown };
  const redirect = preferences.completed_redirect_url ?? submissionPreferences.completed_redirect_url;

  const view: SigningFormView = {
    slug: signer.slug,
    state,
    message: formStateMessage(state),
    waitingFor: state === 'OPEN' ? waitingForRole({ submitter: signer, submission }) : null,
    accountName: submission.account.name,
    submitter: {
      id: signer.id,
      uuid: signer.uuid,
      name: signer.name,
      email: signer.email,
      phone: signer.phone,
      role: roleName(signer.roleUuid),
      status: submitterStatus(signer),
      openedAt: signer.openedAt,
      completedAt: signer.completedAt,
      declinedAt: signer.declinedAt,
    },
    submission: {
      id: submission.id,
      name: submission.name,
      templateName: submission.template.name,
      status: submissionStatus(submission, submission.submitters, now),
      order: submission.submittersOrder,
      expireAt: submission.expireAt,
    },
    documents: schema.flatMap((doc) => {
      const file = documentFiles.find((f) => f.id === doc.file_id);
      if (!file) return [];
      const pages = ((file.pages ?? []) as { width: number; height: number }[]).map((p) => ({
        width: p.width,
        height: p.height,
      }));
      return [{ uuid: doc.attachment_uuid, name: doc.name, url: files.url(file), pages }];
    }),
    fields: shown.map(({ field, own, value, conditions }) => ({
      uuid: field.uuid,
      name: field.name,
      type: field.type,
      required: field.required,
      readonly: !own || field.readonly === true,
      own,
      role: roleName(field.submitter_uuid),
      title: field.title ?? null,
      description: field.description ?? null,
      areas: field.areas,
      options: field.options ?? null,
      preferences: field.preferences ?? {},
      validation: field.validation ?? null,
      conditions,
      defaultValue: field.default_value ?? null,
      value,
      attachments: attachmentUuidsOf(field, value).flatMap((uuid) => {
        const file = attachmentFiles.find((f) => f.uuid === uuid);
        return file ? [{ uuid, url: files.url(file), filename: file.filename, contentType: file.contentType }] : [];
      }),
    })),
    completedDocuments: completedDocuments.map((d) => ({ name: d.name, url: files.url(d.file) })),
    completedRedirectUrl: typeof redirect === 'string' && redirect ? redirect : null,
    // DocuSeal: `preferences.key?('go_to_last') ? preferences['go_to_last'] : opened_at?`
    // (app/views/submit_form/_submission_form.html.erb).
    goToLast:
      typeof preferences.go_to_last === 'boolean'
        ? preferences.go_to_last
        : (options.openedBefore ?? signer.openedAt !== null),
    consent: signingFormConsent(signer),
  };
  viewSigners.set(view, signer);
  return view;
}

/**
 * What the page gets of each own field's conditions, as DocuSeal's form does
 * (Submissions.filtered_conditions_fields, lib/submissions.rb): conditions naming another party's
 * field (or no field) are judged here over every party's values, this signer's own ones taken as
 * met; when they fail, the field is 'hidden' (left out of the view); otherwise the page gets the
 * conditions naming this signer's own fields (null when none), which it judges as the signer types.
 */
function pageConditions(
  fields: Field[],
  signer: SignerForm,
  ownValues: Record<string, unknown>,
): (field: Field) => FieldCondition[] | null | 'hidden' {
  const roleOf = new Map(fields.map((f) => [f.uuid, f.submitter_uuid]));
  const isOwn = (c: FieldCondition) => roleOf.get(c.field_uuid) === signer.roleUuid;
  let evaluator: ConditionEvaluator | undefined;
  return (field) => {
    const conditions = field.conditions ?? [];
    if (conditions.length === 0) return null;
    if (!conditions.every(isOwn)) {
      evaluator ??= evaluateConditions(fields, {
        ...otherPartiesValues(signer.submission.submitters, signer.id),
        ...ownValues,
      });
      const judge = evaluator;
      if (!foldConditions(conditions, (c) => isOwn(c) || judge.check(c))) return 'hidden';
    }
    const own = conditions.filter(isOwn);
    return own.length ? own : null;
  };
}

function attachmentUuidsOf(field: Field, value: unknown): string[] {
  if (!SINGLE_ATTACHMENT_TYPES.has(field.type) && field.type !== 'file' && field.type !== 'payment') return [];
  return (Array.isArray(value) ? value : [value]).filter(
    (v): v is string => typeof v === 'string' && /^[0-9a-f-]{36}$/i.test(v),
  );
}

/**
 * The signed documents of a completed submission: those of the last party to complete (each
 * party's documents are drawn on the previous party's; src/signing/complete-submission.ts), as
 * Submission.documents in the API. Empty until the completion job has made them.
 */
async function resultDocuments(db: Db | Prisma.TransactionClient, submissionId: number) {
  const last = await db.submitter.findFirst({
    where: { submissionId, completedAt: { not: null } },
    orderBy: [{ completedAt: 'desc' }, { id: 'desc' }],
    select: { id: true },
  });
  if (!last) return [];
  return db.completedDocument.findMany({
    where: { submissionId, submitterId: last.id, kind: 'document' },
    orderBy: { position: 'asc' },
    select: { name: true, file: { select: { uuid: true, filename: true } } },
  });
}
