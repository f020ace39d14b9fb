/**
 * One-off submissions over GraphQL: `createSubmissionFromPdf`, `createSubmissionFromDocx` and
 * `createSubmissionFromHtml` make a template from the documents and one submission of it in one
 * call (src/submissions/create-one-off-submission.ts; DocuSeal's POST /submissions/pdf|docx|html,
 * whose REST routes call the same service). Inputs derived from their one definition
 * (src/submissions/one-off-requests.ts); the payload is createSubmissions'.
 */
import {
  createOneOffSubmission,
  type OneOffKind,
  type OneOffRequest,
} from '../../submissions/create-one-off-submission.ts';
import {
  CreateSubmissionFromFileRequest,
  CreateSubmissionFromHtmlRequest,
  SubmissionHtmlDocument,
} from '../../submissions/one-off-requests.ts';
import { builder } from '../builder.ts';
import { requireActor } from '../context.ts';
import { fromGraphQLInput, zodInputType } from '../zod-input.ts';
import { CreateSubmissionsPayload } from './submission.ts';
// The nested input types (TemplateFileDocumentInput, SubmitterInput, …) are registered there first.
import './template-mutations.ts';

const FromFileInput = zodInputType('CreateSubmissionFromFileInput', CreateSubmissionFromFileRequest);
zodInputType('SubmissionHtmlDocumentInput', SubmissionHtmlDocument);
const FromHtmlInput = zodInputType('CreateSubmissionFromHtmlInput', CreateSubmissionFromHtmlRequest);

const DESCRIPTIONS: Record<OneOffKind, string> = {
  pdf: 'PDFs (fields from {{text tags}} and/or `fields`)',
  docx: 'Word DOCX files (converted to PDF; fields from {{text tags}} and/or `fields`)',
  html: 'HTML documents (fields from field tags such as <text-field>)',
};

for (const kind of ['pdf', 'docx', 'html'] as const) {
  const name = `createSubmissionFrom${kind[0]!.toUpperCase()}${kind.slice(1)}`;
  builder.mutationField(name, (t) =>
    t.field({
      type: CreateSubmissionsPayload,
      description:
        `Creates a one-off submission from ${DESCRIPTIONS[kind]}: a template of its own (not listed among the ` +
        "templates) and one submission of it, with createSubmissions' options; nothing is kept when it is refused.",
      args: { input: t.arg({ type: kind === 'html' ? FromHtmlInput : FromFileInput, required: true }) },
      resolve: async (_root, { input }, ctx) => {
        const actor = requireActor(ctx);
        const request: OneOffRequest =
          kind === 'html'
            ? { kind, input: fromGraphQLInput(CreateSubmissionFromHtmlRequest, input) }
            : { kind, input: fromGraphQLInput(CreateSubmissionFromFileRequest, input) };
        const created = await createOneOffSubmission(ctx, actor, request);
        return { submissionIds: [created.submission.id] };
      },
    }),
  );
}
