/**
 * The one-off submission requests (OpenAPI `POST /submissions/pdf`, `/submissions/docx`,
 * `/submissions/html`): a template made from the request's documents and, in the same call, a
 * submission of it. Each is composed of the two definitions it joins, not written again: the
 * template part is CreateTemplateFromFileRequest's documents and fields (or the HTML documents
 * of CreateTemplateFromHtmlRequest, each with its own header, footer and size as the OpenAPI
 * document has them), the submission part is CreateSubmissionsRequest without its template and
 * its modes. GraphQL's input types (`CreateSubmissionFromFileInput`, `CreateSubmissionFromHtmlInput`)
 * and the REST body reading are derived from these (src/graphql/zod-input.ts, rest-compat/params.ts).
 */
import { z } from 'zod';
import { list, MAX_ITEMS } from '../limits.ts';
import {
  CreateTemplateFromFileRequest,
  CreateTemplateFromHtmlRequest,
  TemplateHtmlDocument,
} from '../templates/template-requests.ts';
import { CreateSubmissionsRequest } from './submitter-input.ts';

/** The submission part: one submission (no `emails_mode`, no further submissions); `name` names both. */
export const OneOffSubmissionPart = CreateSubmissionsRequest.omit({
  template_id: true,
  emails_mode: true,
  more_submissions: true,
}).extend({
  name: CreateSubmissionsRequest.shape.name.meta({
    description: "The submission's name, and its template's (default: the first document's name).",
  }),
  template_ids: list(z.number().int(), MAX_ITEMS.templateIds).optional().meta({
    description:
      "Templates whose documents, roles (merged by name) and fields follow the given documents' in the submission.",
  }),
  merge_documents: z.boolean().optional().meta({
    description: 'true: the given documents become one PDF (named as the submission), their fields on its pages.',
  }),
});

/** POST /submissions/pdf and /submissions/docx (GraphQL `CreateSubmissionFromFileInput`). */
export const CreateSubmissionFromFileRequest = CreateTemplateFromFileRequest.pick({
  documents: true,
  fields: true,
  remove_tags: true,
  flatten: true,
}).extend(OneOffSubmissionPart.shape);

/** A document of POST /submissions/html (GraphQL `SubmissionHtmlDocumentInput`). */
export const SubmissionHtmlDocument = TemplateHtmlDocument.extend(
  CreateTemplateFromHtmlRequest.pick({ html_header: true, html_footer: true, size: true }).shape,
);

/** POST /submissions/html (GraphQL `CreateSubmissionFromHtmlInput`). */
export const CreateSubmissionFromHtmlRequest = z
  .object({ documents: list(SubmissionHtmlDocument, MAX_ITEMS.documents) })
  .extend(OneOffSubmissionPart.shape);
