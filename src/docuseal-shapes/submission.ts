/**
 * DocuSeal's submission JSON (reference/docuseal-behaviour.md §5.1; interface spec "Submission"),
 * from the read model the GraphQL fragments below select: GET /submissions/{id}, PUT
 * /submissions/{id} and the submission.created/completed/expired webhooks (src/webhooks/payloads.ts).
 * The list item's JSON (serializeSubmissionListItem) is GET /submissions' items: the REST layer's
 * serializers/submission-list.ts keeps its output (JSON text without the signed URLs) and renders
 * again when the fingerprint of this function changes (LIST_ITEM_FORMAT there).
 */
import {
  serializeEvents,
  serializeSubmitterBase,
  SUBMITTER_BASE_FRAGMENT,
  type EventData,
  type SubmitterBaseData,
} from './submitter.ts';
import { serializeTemplateField, type TemplateFieldData } from './template.ts';
import { userName } from './user.ts';

/** The submission's own keys, its template and its creator: what every submission shape reads. */
const SUBMISSION_BASE_FRAGMENT = /* GraphQL */ `
  fragment RestSubmissionBase on Submission {
    id name slug source submittersOrder expireAt createdAt updatedAt archivedAt variables status completedAt
    auditLogUrl combinedDocumentUrl language
    template { id name externalId createdAt updatedAt folderName }
    createdByUser { id email firstName lastName }
  }
`;

/** A GET /submissions list item: submitters in the list form. */
export const SUBMISSION_LIST_FRAGMENT = /* GraphQL */ `
  fragment RestSubmissionList on Submission {
    ...RestSubmissionBase
    submitters { ...RestSubmitterBase }
  }
  ${SUBMISSION_BASE_FRAGMENT}
  ${SUBMITTER_BASE_FRAGMENT}
`;

/** GET /submissions/{id}: submitters with values and documents, events, documents. */
export const SUBMISSION_GET_FRAGMENT = /* GraphQL */ `
  fragment RestSubmissionGet on Submission {
    ...RestSubmissionBase
    submitters { ...RestSubmitterBase values documents { name url } }
    events { id submitterId eventType eventTimestamp data }
    documents { name url }
    completionError { message failedAt }
  }
  ${SUBMISSION_BASE_FRAGMENT}
  ${SUBMITTER_BASE_FRAGMENT}
`;

export interface SubmissionTemplateData {
  id: number;
  name: string;
  externalId: string | null;
  createdAt: string;
  updatedAt: string;
  folderName: string;
}

/** `template` of a submission (§5.1) and of the form.* webhook data (§5.6). */
export function serializeSubmissionTemplate(t: SubmissionTemplateData) {
  return {
    id: t.id,
    name: t.name,
    external_id: t.externalId,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
    folder_name: t.folderName,
  };
}

export interface SubmissionListData {
  id: number;
  name: string | null;
  slug: string;
  source: string;
  submittersOrder: string;
  expireAt: string | null;
  createdAt: string;
  updatedAt: string;
  archivedAt: string | null;
  variables: unknown;
  status: string;
  completedAt: string | null;
  auditLogUrl: string | null;
  combinedDocumentUrl: string | null;
  /** The language of its parties without their own (a Signet extension), or null. */
  language: string | null;
  template: SubmissionTemplateData | null;
  createdByUser: { id: number; email: string; firstName: string | null; lastName: string | null } | null;
  submitters: SubmitterBaseData[];
}

export interface SubmissionGetData extends Omit<SubmissionListData, 'submitters'> {
  submitters: (SubmitterBaseData & { values: unknown; documents: { name: string; url: string }[] })[];
  events: EventData[];
  documents: { name: string; url: string }[];
  completionError: { message: string; failedAt: string } | null;
}

function base(s: Omit<SubmissionListData, 'submitters'>) {
  return {
    id: s.id,
    // DocuSeal's OpenAPI types `name` as a string; an unnamed submission goes by its template's
    // name, as DocuSeal's {{submission.name}} does (docs/compatibility.md).
    name: s.name ?? s.template?.name ?? null,
    slug: s.slug,
    source: s.source,
    submitters_order: s.submittersOrder,
    expire_at: s.expireAt,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
    archived_at: s.archivedAt,
    template: s.template ? serializeSubmissionTemplate(s.template) : null,
    created_by_user: s.createdByUser
      ? {
          id: s.createdByUser.id,
          email: s.createdByUser.email,
          first_name: userName(s.createdByUser.firstName),
          last_name: userName(s.createdByUser.lastName),
        }
      : null,
    variables: s.variables ?? {},
    audit_log_url: s.auditLogUrl,
    combined_document_url: s.combinedDocumentUrl,
    status: s.status,
    completed_at: s.completedAt,
    // Signet extension (docs/compatibility.md "The signer's language").
    language: s.language,
  };
}

/** A list item: submitters in the list form (no values, no documents). */
export function serializeSubmissionListItem(s: SubmissionListData) {
  const { template, created_by_user, ...rest } = base(s);
  return { ...rest, submitters: s.submitters.map(serializeSubmitterBase), template, created_by_user };
}

/** GET /submissions/{id}; `withEvents: false` for PUT /submissions/{id} (§5.1). */
export function serializeSubmissionGet(s: SubmissionGetData, options: { withEvents?: boolean } = {}) {
  const { template, created_by_user, ...rest } = base(s);
  return {
    ...rest,
    submitters: s.submitters.map((x) => ({ ...serializeSubmitterBase(x), values: x.values, documents: x.documents })),
    template,
    created_by_user,
    ...(options.withEvents === false ? {} : { submission_events: serializeEvents(s.events) }),
    documents: s.documents,
    // Required by DocuSeal's OpenAPI for this response although its code never fills it (§14.11).
    metadata: {},
    // Signet extension (docs/compatibility.md): why the signed documents could not be produced.
    completion_error: s.completionError
      ? { message: s.completionError.message, failed_at: s.completionError.failedAt }
      : null,
  };
}

/** A submitter's field under `include=fields` (§5.2): which fields and values as `values` has them. */
export interface SubmitterFieldData {
  name: string;
  uuid: string;
  value: unknown;
  readonly: boolean;
}

/** What `include=fields` adds to a submission and its submitters (§5.1, §5.2). */
export interface SubmissionFieldsData {
  id: number;
  /** The submission's own copy of the template's fields. */
  fields: TemplateFieldData[];
  submitters: { id: number; fields: SubmitterFieldData[] }[];
}

/**
 * The JSON `include=fields` adds (Submissions::SerializeForApi, Submitters::SerializeForApi):
 * the submission's `fields` (its copy of the template's fields, each as a template's field is
 * shown) and each submitter's `fields` (`[{name, uuid, value, readonly}]`), by submitter id.
 */
export function serializeIncludedFields(m: SubmissionFieldsData) {
  return {
    fields: m.fields.map(serializeTemplateField),
    submitters: new Map(
      m.submitters.map((s) => [
        s.id,
        s.fields.map((f) => ({ name: f.name, uuid: f.uuid, value: f.value, readonly: f.readonly })),
      ]),
    ),
  };
}
