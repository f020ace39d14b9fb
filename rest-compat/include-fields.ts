/**
 * DocuSeal's `include=fields` (reference/docuseal-behaviour.md §4, §5.1, §5.2): with it, a
 * submission carries `fields` (its own copy of the template's fields) and every submitter
 * `fields` (`[{name, uuid, value, readonly}]`), on every route whose answer DocuSeal serializes
 * with the request's params — GET /submissions (items and their submitters), GET and PUT
 * /submissions/{id}, GET /submitters, GET and PUT /submitters/{id}, and the create answers
 * (Api::SubmissionsController, Api::SubmittersController, Submissions::SerializeForApi,
 * Submitters::SerializeForApi). The keys are added at the end of each object. The data is
 * src/submissions/read-models.ts loadSubmissionFieldsReadModels, its JSON
 * src/docuseal-shapes/submission.ts serializeIncludedFields.
 *
 * `include` is read as DocuSeal reads `params[:include].to_s.include?('fields')`: a substring of
 * the query's `include` or, as Rails merges the body into `params`, of a body's `include` string.
 * `include=combined_document_url` is another value (its own work); it does not contain "fields".
 */
import { serializeIncludedFields } from '../src/docuseal-shapes/submission.ts';
import { requireViewer } from '../src/graphql/context.ts';
import { loadSubmissionFieldsReadModels } from '../src/submissions/read-models.ts';
import type { RestRequest } from './gateway.ts';
import { queryString } from './params.ts';

/** Whether the request asks for `include=fields` (the module comment says how it is read). */
export function includesFields(request: RestRequest): boolean {
  const fromQuery = queryString(request, 'include');
  const body = request.body;
  const fromBody =
    typeof body === 'object' && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>).include
      : undefined;
  return [fromQuery, fromBody].some((value) => typeof value === 'string' && value.includes('fields'));
}

type Json = Record<string, unknown>;

/** The included fields of some submissions, looked up by submission id and by submitter id. */
export interface IncludedFields {
  submission(id: number): unknown[];
  submitter(id: number): unknown[];
}

/**
 * The fields `include=fields` adds for the submissions `submissionIds` (of the caller's account),
 * or null when the request does not ask for them (then nothing is loaded).
 */
export async function includedFields(
  request: RestRequest,
  submissionIds: readonly number[],
): Promise<IncludedFields | null> {
  if (!includesFields(request)) return null;
  const { context } = request;
  const models = await loadSubmissionFieldsReadModels(
    { db: context.db, files: context.files },
    { accountId: requireViewer(context).account.id, ids: submissionIds },
  );
  const bySubmission = new Map<number, unknown[]>();
  const bySubmitter = new Map<number, unknown[]>();
  for (const model of models) {
    if (!model) continue;
    const json = serializeIncludedFields(model);
    bySubmission.set(model.id, json.fields);
    for (const [id, fields] of json.submitters) bySubmitter.set(id, fields);
  }
  return {
    submission: (id) => bySubmission.get(id) ?? [],
    submitter: (id) => bySubmitter.get(id) ?? [],
  };
}

/** A submitter's JSON (any shape with `id`) with its `fields`. */
export function withSubmitterFields<T extends Json>(submitter: T, included: IncludedFields): T {
  return { ...submitter, fields: included.submitter(submitter.id as number) };
}

/** A submission's JSON (with `id` and `submitters`) with its `fields` and each submitter's. */
export function withSubmissionFields<T extends Json>(submission: T, included: IncludedFields): T {
  const submitters = Array.isArray(submission.submitters)
    ? (submission.submitters as Json[]).map((s) => withSubmitterFields(s, included))
    : submission.submitters;
  return { ...submission, submitters, fields: included.submission(submission.id as number) };
}
