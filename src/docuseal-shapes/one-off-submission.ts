/**
 * The answer of DocuSeal's one-off routes (POST /submissions/pdf, /submissions/docx,
 * /submissions/html; OpenAPI `createSubmissionFromPdf|Docx|Html` 200 schema,
 * reference/docuseal-behaviour.md §5.3): the submission's own keys, its submitters in the create
 * shape (serializeCreatedSubmitter, as POST /submissions answers them), its documents (`schema`:
 * attachment_uuid and name) and its fields as the submission keeps them (areas in fractions of
 * the page, `page` 0-based, as every stored field), and `documents` (the signed documents: none
 * yet, as DocuSeal's submission JSON before completion).
 */
import type { CreatedOneOffSubmission } from '../submissions/create-one-off-submission.ts';
import { submissionStatus } from '../submissions/status.ts';
import { type CreatedSubmitterData, serializeCreatedSubmitter } from './submitter.ts';

const at = (value: string | null) => (value === null ? null : new Date(value));

/**
 * @param created what createOneOffSubmission made
 * @param submitters its submitters in the create shape (createdSubmittersAnswer), in id order
 */
export function serializeOneOffSubmission(created: CreatedOneOffSubmission, submitters: CreatedSubmitterData[]) {
  const { submission } = created;
  return {
    id: submission.id,
    name: created.name,
    submitters: submitters.map(serializeCreatedSubmitter),
    source: created.source,
    submitters_order: created.submittersOrder,
    status: submissionStatus(
      {
        completedAt: submitters.length > 0 && submitters.every((s) => s.completedAt) ? new Date() : null,
        expireAt: at(submission.expireAt),
      },
      [],
    ),
    schema: created.schema.map((d) => ({ attachment_uuid: d.attachment_uuid, name: d.name })),
    fields: submission.fields,
    documents: [],
    expire_at: submission.expireAt,
    created_at: submission.createdAt,
  };
}
