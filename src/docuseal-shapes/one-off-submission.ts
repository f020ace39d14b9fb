/**
 * The answer of DocuSeal's one-off routes (POST /submissions/pdf, /submissions/docx,
 * /submissions/html; OpenAPI `createSubmissionFromPdf|Docx|Html` 200 schema,
 * reference/docuseal-behaviour.md §5.3): the submission's own keys, its submitters in the create
 * shape (serializeCreatedSubmitter, as POST /submissions answers them), its documents (`schema`:
 * attachment_uuid and name) and its fields as the submission keeps them (areas in fractions of
 * the page, `page` 0-based, as every stored field), and `documents` (the signed documents: none
 * yet, as DocuSeal's submission JSON before completion).
 */
import { type CreatedSubmitterData, serializeCreatedSubmitter } from './submitter.ts';

/** The read model of a one-off answer (src/submissions/created-read-models.ts oneOffSubmissionReadModel). */
export interface OneOffSubmissionData {
  id: number;
  name: string;
  source: string;
  submittersOrder: string;
  status: string;
  /** Its submitters in the create shape, in id order. */
  submitters: CreatedSubmitterData[];
  schema: { attachment_uuid: string; name: string }[];
  /** Its fields as the submission keeps them. */
  fields: unknown[];
  expireAt: string | null;
  createdAt: string;
}

/** The one-off answer (module comment). */
export function serializeOneOffSubmission(s: OneOffSubmissionData) {
  return {
    id: s.id,
    name: s.name,
    submitters: s.submitters.map(serializeCreatedSubmitter),
    source: s.source,
    submitters_order: s.submittersOrder,
    status: s.status,
    schema: s.schema.map((d) => ({ attachment_uuid: d.attachment_uuid, name: d.name })),
    fields: s.fields,
    documents: [],
    expire_at: s.expireAt,
    created_at: s.createdAt,
  };
}
