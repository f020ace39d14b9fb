/**
 * DocuSeal's webhook `data` objects that are not a REST answer (reference/docuseal-behaviour.md
 * §5.6; interface spec "Events"): the form submitter payload of form.* events and the
 * `{id, archived_at}` of submission.archived and template.archived. submission.* and template.*
 * events carry the GET /submissions/{id} and GET /templates/{id} shapes (submission.ts,
 * template.ts).
 *
 * The form submitter payload (DocuSeal's `Submitters::SerializeForWebhook`; every field of the
 * spec's table): id, submission_id, email, phone, name, ua, ip, sent_at, opened_at, completed_at,
 * declined_at, created_at, updated_at, external_id, metadata, status (the **submission's**
 * status, as the interface spec's Events table says; DocuSeal's code sends the submitter's, which
 * is in `submitter_status` here; docs/compatibility.md), submitter_status, application_key,
 * decline_reason, role, preferences, values, documents, audit_log_url, submission_url, template
 * {id, name, external_id, created_at, updated_at, folder_name}, submission {id, audit_log_url,
 * combined_document_url, status, url, variables, created_at}. No slug, uuid or embed_src.
 */
import { type SubmissionTemplateData, serializeSubmissionTemplate } from './submission.ts';
import { SUBMITTER_BASE_FRAGMENT, serializeSubmitterBase, type SubmitterBaseData } from './submitter.ts';

/** The read model of the form submitter payload, as a GraphQL selection on `Submitter`. */
export const FORM_SUBMITTER_FRAGMENT = /* GraphQL */ `
  fragment WebhookFormSubmitter on Submitter {
    ...RestSubmitterBase
    values
    documents { name url }
    submission {
      id slug status auditLogUrl combinedDocumentUrl variables createdAt
      template { id name externalId createdAt updatedAt folderName }
    }
  }
  ${SUBMITTER_BASE_FRAGMENT}
`;

export interface FormSubmitterData extends SubmitterBaseData {
  values: unknown;
  documents: { name: string; url: string }[];
  submission: {
    id: number;
    slug: string;
    status: string;
    auditLogUrl: string | null;
    combinedDocumentUrl: string | null;
    variables: unknown;
    createdAt: string;
    template: SubmissionTemplateData;
  };
}

/** The client a submitter signed from, and why it declined: submitter columns the GraphQL schema does not carry. */
export interface SubmitterClient {
  ip: string | null;
  ua: string | null;
  declineReason: string | null;
}

/**
 * The form.* webhook `data` (module comment) of a submitter.
 * @param appUrl the service's public URL, for `submission_url` (`{appUrl}/e/{submission slug}`)
 */
export function formSubmitterData(s: FormSubmitterData, client: SubmitterClient, appUrl: string) {
  const base = serializeSubmitterBase(s);
  const submission = s.submission;
  const submissionUrl = `${appUrl}/e/${submission.slug}`;
  return {
    id: base.id,
    submission_id: base.submission_id,
    email: base.email,
    phone: base.phone,
    name: base.name,
    ua: client.ua,
    ip: client.ip,
    sent_at: base.sent_at,
    opened_at: base.opened_at,
    completed_at: base.completed_at,
    declined_at: base.declined_at,
    created_at: base.created_at,
    updated_at: base.updated_at,
    external_id: base.external_id,
    metadata: base.metadata,
    // The spec's Events table: "status: submission status" (it wins over DocuSeal's code, DESIGN.md).
    status: submission.status,
    submitter_status: base.status,
    application_key: base.application_key,
    decline_reason: client.declineReason,
    role: base.role,
    preferences: base.preferences,
    values: s.values,
    documents: s.documents,
    audit_log_url: submission.auditLogUrl,
    submission_url: submissionUrl,
    template: serializeSubmissionTemplate(submission.template),
    submission: {
      id: submission.id,
      audit_log_url: submission.auditLogUrl,
      combined_document_url: submission.combinedDocumentUrl,
      status: submission.status,
      url: submissionUrl,
      variables: submission.variables ?? {},
      created_at: submission.createdAt,
    },
  };
}

/** submission.archived and template.archived `data`: `{id, archived_at}` (ISO 8601 or null). */
export function archivedData(record: { id: number; archivedAt: string | null }) {
  return { id: record.id, archived_at: record.archivedAt };
}
