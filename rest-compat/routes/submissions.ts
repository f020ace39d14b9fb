/**
 * DocuSeal's submission create routes (interface spec "Submissions"; reference §7):
 * POST /submissions, /submissions/init, /templates/{id}/submissions and /submissions/emails, all
 * through createSubmissionsForRequest, the service the `createSubmissions` mutation calls (its
 * answer made by src/submissions/created-read-models.ts), and the one-off POST
 * /submissions/pdf, /submissions/docx, /submissions/html through createOneOffSubmission (the
 * `createSubmissionFrom*` mutations' service). The request's shape is checked here with DocuSeal's
 * messages (§7.1: "submitters must be a Array", "0 must be a Object in `submitters`.", …);
 * the rules about contents are the service's.
 */
import { AppError } from '../../src/errors.ts';
import type { RestRequest, RestRoute } from '../gateway.ts';
import { CreateSubmissionsRequest, UpdateSubmitterRequest } from '../../src/submissions/submitter-input.ts';
import { UpdateSubmissionRequest } from '../../src/submissions/update-submission-input.ts';
import {
  bodyObject,
  isTruthy,
  pathId,
  permanentlyParam,
  queryInt,
  queryString,
  restInput,
  restValue,
} from '../params.ts';
import {
  serializeSubmissionGet,
  SUBMISSION_GET_FRAGMENT,
  type SubmissionGetData,
} from '../../src/docuseal-shapes/submission.ts';
import {
  serializeCreatedSubmitter,
  serializeSubmitterRead,
  serializeSubmitterUpdate,
  SUBMITTER_READ_FRAGMENT,
  SUBMITTER_UPDATE_FRAGMENT,
  type SubmitterReadData,
  type SubmitterUpdateData,
} from '../../src/docuseal-shapes/submitter.ts';
import { renderSubmissionList } from '../serializers/submission-list.ts';
import { includedFields, withSubmissionFields, withSubmitterFields } from '../include-fields.ts';
import { createdSubmittersAnswer, oneOffSubmissionReadModel } from '../../src/submissions/created-read-models.ts';
import { requireActor } from '../../src/graphql/context.ts';
import { fromGraphQLInput } from '../../src/graphql/zod-input.ts';
import type { CreatedSubmission } from '../../src/submissions/create-submissions.ts';
import { createSubmissionsForRequest } from '../../src/submissions/create-submissions-request.ts';
import { readSubmissionForAccount } from '../../src/submissions/read-models.ts';
import {
  type CreatedOneOffSubmission,
  createOneOffSubmission,
  type OneOffKind,
  type OneOffRequest,
} from '../../src/submissions/create-one-off-submission.ts';
import {
  CreateSubmissionFromFileRequest,
  CreateSubmissionFromHtmlRequest,
} from '../../src/submissions/one-off-requests.ts';
import { serializeOneOffSubmission } from '../../src/docuseal-shapes/one-off-submission.ts';
import { readFileDocumentsBody } from './templates.ts';

type Body = Record<string, unknown>;

function isObject(value: unknown): value is Body {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A list of submitters, read against the submitter input's definition (restValue).
 * @param path where the list is ("submitters", "submissions[1].submitters")
 */
function submitterList(value: unknown, path: string) {
  if (value === undefined || value === null || (Array.isArray(value) && value.length === 0))
    throw new AppError('VALIDATION', 'submitters is required');
  const at = path.lastIndexOf('.');
  return restValue(SUBMITTERS, value, path.slice(at + 1), at < 0 ? undefined : path.slice(0, at));
}

const SUBMITTERS = CreateSubmissionsRequest.shape.submitters;

function templateIdOf(request: RestRequest, body: Body): number {
  if (request.params.id !== undefined) return pathId(request, 'Template');
  const raw = body.template_id ?? (isObject(body.submission) ? body.submission.template_id : undefined);
  if (raw === undefined || raw === null || raw === '') throw new AppError('VALIDATION', 'Template not found');
  const id = Number(raw);
  if (!Number.isInteger(id) || id <= 0) throw new AppError('NOT_FOUND', `Template ${String(raw)} not found`);
  return id;
}

/**
 * Submitters mode: top-level `submitters`, or the earlier shape `submission: {submitters}` /
 * `submission(s): [{submitters}, ...]`.
 */
function createVariables(request: RestRequest) {
  const body = bodyObject(request);
  const templateId = templateIdOf(request, body);
  const groups: unknown[] = [];
  if (body.submitters !== undefined) groups.push(body.submitters);
  else if (Array.isArray(body.submission) || Array.isArray(body.submissions)) {
    for (const entry of (body.submission ?? body.submissions) as unknown[])
      groups.push(isObject(entry) ? entry.submitters : undefined);
  } else if (isObject(body.submission)) groups.push(body.submission.submitters);
  else if (typeof (body.emails ?? body.email) === 'string') return emailsVariables(request);
  else groups.push(undefined);

  const [first, ...rest] = groups.map((g, i) =>
    submitterList(g, groups.length > 1 ? `submissions[${i}].submitters` : 'submitters'),
  );
  return {
    input: {
      ...restInput(CreateSubmissionsRequest, body, { omit: ROUTE_KEYS }),
      templateId,
      submitters: first,
      moreSubmissions: rest.length ? rest.map((submitters) => ({ submitters })) : undefined,
    },
  };
}

/** Keys of the create input the routes read themselves (the path id and the earlier shapes), or not at all. */
const ROUTE_KEYS = ['template_id', 'submitters', 'emails_mode', 'more_submissions'];

/**
 * POST /submissions/emails: `emails` (or `email`) comma-separated; one submission per address (§7.6),
 * with `send_email`, `message` and Signet's `reminders`.
 */
function emailsVariables(request: RestRequest) {
  const body = bodyObject(request);
  const templateId = templateIdOf(request, body);
  const raw = body.emails ?? body.email;
  if (raw === undefined || raw === null || raw === '') throw new AppError('VALIDATION', 'emails or email is required');
  if (typeof raw !== 'string') throw new AppError('VALIDATION', 'emails must be a String');
  // The addresses: the separated words with an "@" inside them. (Split, then test each word: a
  // regular expression searching for `[^sep]+@[^sep]+` backtracks quadratically on a long word.)
  const emails = [...new Set(raw.split(/[\s,;<>"']+/).filter((word) => word.slice(1, -1).includes('@')))];
  if (emails.length === 0) throw new AppError('VALIDATION', 'emails are invalid');
  return {
    input: {
      templateId,
      emailsMode: true,
      submitters: emails.map((email) => ({ email })),
      ...restInput(CreateSubmissionsRequest, body, { only: ['send_email', 'message', 'reminders'] }),
    },
  };
}

/**
 * The create routes call the service directly (createSubmissionsForRequest, which the
 * `createSubmissions` mutation calls too): the operation is kept for its variable definitions,
 * which check and coerce the request's input as executing it would. Going through GraphQL only
 * cost: its answer (the ids) would have to be read back, and the answer is made from the rows the
 * service stored (src/submissions/created-read-models.ts). docs/architecture.md lists such routes.
 */
const OPERATION = /* GraphQL */ `
  mutation RestCreateSubmissions($input: CreateSubmissionsInput!) {
    createSubmissions(input: $input) { submissionIds }
  }
`;

/** Carries out the create request as the mutation would, acting for the caller's key. */
const create = (variables: Record<string, unknown>, { context }: RestRequest) => {
  return createSubmissionsForRequest(
    context,
    requireActor(context),
    fromGraphQLInput(CreateSubmissionsRequest, variables.input),
  );
};

const answer = (created: CreatedSubmission[], { context }: RestRequest) =>
  createdSubmittersAnswer(
    {
      filesByUuid: (uuids) => context.loaders.storedFileByUuid.loadMany(uuids),
      fileUrl: (file) => context.files.url(file),
      appUrl: context.config.appUrl,
    },
    created,
  );

/** The create answer's submitters, each with its `fields` under `include=fields` (include-fields.ts). */
async function createdSubmitters(created: CreatedSubmission[], request: RestRequest) {
  const result = await answer(created, request);
  const submitters = result.submitters.map(serializeCreatedSubmitter);
  const included = await includedFields(
    request,
    created.map((c) => c.id),
  );
  return {
    submissions: result.submissions,
    submitters: included ? submitters.map((s) => withSubmitterFields(s, included)) : submitters,
  };
}

const submittersArray = async (created: CreatedSubmission[], request: RestRequest) =>
  (await createdSubmitters(created, request)).submitters;

export const submissionRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/submissions',
    operation: OPERATION,
    variables: createVariables,
    run: create,
    serialize: submittersArray,
  },
  {
    method: 'POST',
    path: '/templates/:id/submissions',
    operation: OPERATION,
    variables: createVariables,
    run: create,
    serialize: submittersArray,
  },
  {
    method: 'POST',
    path: '/submissions/emails',
    operation: OPERATION,
    variables: emailsVariables,
    run: create,
    serialize: submittersArray,
  },
  {
    method: 'POST',
    path: '/submissions/init',
    operation: OPERATION,
    variables: createVariables,
    run: create,
    // One submission → {id, submitters, expire_at, created_at}; several → {submitters} (§5.3).
    serialize: async (created: CreatedSubmission[], request: RestRequest) => {
      const { submissions, submitters } = await createdSubmitters(created, request);
      if (submissions.length !== 1) return { submitters };
      const [only] = submissions;
      return { id: only!.id, submitters, expire_at: only!.expireAt, created_at: only!.createdAt };
    },
  },
  oneOffRoute('pdf'),
  oneOffRoute('docx'),
  oneOffRoute('html'),
];

// ---------------------------------------------------------------------------------------------
// One-off submissions (OpenAPI `POST /submissions/pdf|docx|html`): a template from the documents
// and one submission of it, by createOneOffSubmission, the service the `createSubmissionFrom*`
// mutations call (called directly, as the create routes above, for the same reason). The body
// is read against CreateSubmissionFromFileRequest / CreateSubmissionFromHtmlRequest: the
// documents as POST /templates/pdf|docx|html read them, the submitters as POST /submissions does.

/** The body of a one-off route, as the mutation's input. */
function oneOffVariables(kind: OneOffKind) {
  return (request: RestRequest) => {
    const body = bodyObject(request);
    const submitters = submitterList(body.submitters, 'submitters');
    if (kind !== 'html')
      return {
        input: {
          ...readFileDocumentsBody(CreateSubmissionFromFileRequest, body, { omit: ['submitters'] }),
          submitters,
        },
      };
    if (body.documents === undefined || body.documents === null)
      throw new AppError('VALIDATION', 'documents is required.');
    const input = restInput(CreateSubmissionFromHtmlRequest, body, { omit: ['submitters'] });
    (input.documents as Body[]).forEach((doc, i) => {
      if (!doc.html) throw new AppError('VALIDATION', `html is required in \`documents[${i}]\`.`);
    });
    return { input: { ...input, submitters } };
  };
}

function oneOffRoute(kind: OneOffKind): RestRoute<CreatedOneOffSubmission> {
  const Kind = `${kind[0]!.toUpperCase()}${kind.slice(1)}`;
  const inputType = kind === 'html' ? 'CreateSubmissionFromHtmlInput' : 'CreateSubmissionFromFileInput';
  return {
    method: 'POST',
    path: `/submissions/${kind}`,
    operation: /* GraphQL */ `
      mutation RestCreateSubmissionFrom${Kind}($input: ${inputType}!) {
        createSubmissionFrom${Kind}(input: $input) { submissionIds }
      }
    `,
    variables: oneOffVariables(kind),
    run: (variables, { context }) => {
      const actor = requireActor(context);
      const request: OneOffRequest =
        kind === 'html'
          ? { kind, input: fromGraphQLInput(CreateSubmissionFromHtmlRequest, variables.input) }
          : { kind, input: fromGraphQLInput(CreateSubmissionFromFileRequest, variables.input) };
      return createOneOffSubmission(context, actor, request);
    },
    serialize: async (created, request) =>
      serializeOneOffSubmission(
        oneOffSubmissionReadModel(created, (await answer([created.submission], request)).submitters),
      ),
  };
}

// ---------------------------------------------------------------------------------------------
// Reading and changing (interface spec "Submissions", "Submitters"; reference §4, §5, §7.7, §8).

const listSubmissionsOperation = /* GraphQL */ `
  query RestSubmissions(
    $templateId: Int, $q: String, $templateFolder: String, $status: String, $archived: Boolean, $slug: String,
    $limit: Int, $after: Int, $before: Int, $ensureCombinedDocuments: Boolean
  ) {
    submissions(
      templateId: $templateId, q: $q, templateFolder: $templateFolder, status: $status, archived: $archived,
      slug: $slug, limit: $limit, after: $after, before: $before, ensureCombinedDocuments: $ensureCombinedDocuments
    ) {
      ids
      pagination { count next prev }
    }
  }
`;

function listSubmissionsVariables(request: RestRequest) {
  const archived = queryString(request, 'archived');
  return {
    templateId: request.params.id !== undefined ? pathId(request, 'Template') : queryInt(request, 'template_id'),
    q: queryString(request, 'q') || undefined,
    templateFolder: queryString(request, 'template_folder') || undefined,
    status: queryString(request, 'status') || undefined,
    // Absent: archived and active alike; "true": archived only; anything else: active only (§4).
    archived: archived === undefined ? undefined : isTruthy(archived),
    slug: queryString(request, 'slug'),
    limit: queryInt(request, 'limit'),
    after: queryInt(request, 'after'),
    before: queryInt(request, 'before'),
    ensureCombinedDocuments: includesCombinedDocument(request) || undefined,
  };
}

/**
 * `include=combined_document_url` (DocuSeal reads `params[:include].to_s.include?(...)`, reference §5.1):
 * completed submissions without a combined PDF get one now.
 */
const includesCombinedDocument = (request: RestRequest) =>
  (queryString(request, 'include') ?? '').includes('combined_document_url');

type ListData = {
  submissions: { ids: number[]; pagination: { count: number; next: number | null; prev: number | null } };
};
/**
 * The items of the ids the GraphQL query chose, serialized and kept by serializers/submission-list.ts;
 * with `include=fields`, each item and its submitters with their `fields` (include-fields.ts).
 */
const serializeSubmissionList = async ({ submissions }: ListData, request: RestRequest) => {
  const included = await includedFields(request, submissions.ids);
  return renderSubmissionList(
    request.context,
    submissions.ids,
    submissions.pagination,
    included ? (item) => withSubmissionFields(item, included) : undefined,
  );
};

/** GET and PUT /submissions/{id}: the submission's JSON, with its `fields` under `include=fields`. */
async function submissionAnswer(json: ReturnType<typeof serializeSubmissionGet>, request: RestRequest) {
  const included = await includedFields(request, [json.id]);
  return included ? withSubmissionFields(json, included) : json;
}

/** A submitter's JSON (GET, PUT /submitters), with its `fields` under `include=fields`. */
async function submitterAnswers<T extends { id: number; submission_id: number }>(json: T[], request: RestRequest) {
  const included = await includedFields(
    request,
    json.map((s) => s.submission_id),
  );
  return included ? json.map((s) => withSubmitterFields(s, included)) : json;
}

const getSubmissionOperation = /* GraphQL */ `
  query RestSubmission($id: Int!) { submission(id: $id) { ...RestSubmissionGet } }
  ${SUBMISSION_GET_FRAGMENT}
`;

const submitterReadOperationList = /* GraphQL */ `
  query RestSubmitters(
    $submissionId: Int, $templateId: Int, $q: String, $externalId: String, $slug: String,
    $completedAfter: DateTime, $completedBefore: DateTime, $limit: Int, $after: Int, $before: Int
  ) {
    submitters(
      submissionId: $submissionId, templateId: $templateId, q: $q, externalId: $externalId, slug: $slug,
      completedAfter: $completedAfter, completedBefore: $completedBefore, limit: $limit, after: $after, before: $before
    ) {
      nodes { ...RestSubmitterRead }
      pagination { count next prev }
    }
  }
  ${SUBMITTER_READ_FRAGMENT}
`;

/** completed_after / completed_before: any parseable date-time, no offset = UTC (e.g. "2024-03-05 9:32:20"). */
function queryDate(request: RestRequest, name: string): string | undefined {
  const raw = queryString(request, name);
  if (raw === undefined || raw === '') return undefined;
  const text = raw.trim();
  const date = new Date(
    /[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text.replace(' ', 'T')}${/T|\s/.test(text) ? '' : 'T00:00:00'}Z`,
  );
  if (Number.isNaN(date.getTime())) throw new AppError('VALIDATION', `${name} is invalid`);
  return date.toISOString();
}

export const submissionReadRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/submissions',
    operation: listSubmissionsOperation,
    variables: listSubmissionsVariables,
    serialize: serializeSubmissionList,
  },
  {
    method: 'GET',
    path: '/templates/:id/submissions',
    operation: listSubmissionsOperation,
    variables: listSubmissionsVariables,
    serialize: serializeSubmissionList,
  },
  {
    method: 'GET',
    path: '/submissions/:id',
    operation: getSubmissionOperation,
    variables: (request) => ({ id: pathId(request, 'Submission') }),
    // The read model the submission.* webhooks are made of (src/submissions/read-models.ts), so
    // their `data` is this answer by construction; the operation only coerces the id.
    run: async (variables, request) => {
      const { context } = request;
      const { accountId, folders } = requireActor(context);
      const options = { id: variables.id as number, accountId, folders };
      const submission = await readSubmissionForAccount(context, options);
      if (submission.completedAt === null || submission.combinedDocumentUrl !== null) return submission;
      if (!includesCombinedDocument(request)) return submission;
      const { ensureCombinedDocument } = await import('../../src/signing/submission-outputs.ts');
      await ensureCombinedDocument(context, options);
      return readSubmissionForAccount(context, options);
    },
    serialize: (submission: SubmissionGetData, request) =>
      submissionAnswer(serializeSubmissionGet(submission), request),
  },
  {
    method: 'GET',
    path: '/submissions/:id/documents',
    // Before completion, the documents as filled so far; `merge=true` (exactly, as DocuSeal): one PDF (§10.6).
    operation: /* GraphQL */ `
      query RestSubmissionDocuments($id: Int!, $merge: Boolean) {
        submissionDocuments(id: $id, merge: $merge) { id documents { name url } }
      }
    `,
    variables: (request) => ({ id: pathId(request, 'Submission'), merge: queryString(request, 'merge') === 'true' }),
    serialize: ({ submissionDocuments }: { submissionDocuments: { id: number; documents: unknown[] } }) => ({
      id: submissionDocuments.id,
      documents: submissionDocuments.documents,
    }),
  },
  {
    method: ['PUT', 'PATCH'],
    path: '/submissions/:id',
    operation: /* GraphQL */ `
      mutation RestUpdateSubmission($input: UpdateSubmissionInput!) {
        updateSubmission(input: $input) { submission { ...RestSubmissionGet } }
      }
      ${SUBMISSION_GET_FRAGMENT}
    `,
    variables: (request) => {
      const outer = bodyObject(request);
      const body = isObject(outer.submission) ? outer.submission : outer;
      const id = pathId(request, 'Submission');
      // DocuSeal's other names: `archived_at` for `archived`; `expire_at: null` (or "") clears the expiry.
      const clear = 'expire_at' in body && (body.expire_at === null || body.expire_at === '');
      const renamed = { ...body, archived: body.archived ?? body.archived_at, clear_expire_at: clear || undefined };
      return { input: { id, ...restInput(UpdateSubmissionRequest, renamed, { omit: ['id'] }) } };
    },
    serialize: ({ updateSubmission }: { updateSubmission: { submission: SubmissionGetData } }, request) =>
      submissionAnswer(serializeSubmissionGet(updateSubmission.submission, { withEvents: false }), request),
  },
  {
    // Archives (submission.archived), or with `permanently` true deletes (deleteSubmission, no
    // event); `{id, archived_at}` either way (DocuSeal's SubmissionsController#destroy).
    method: 'DELETE',
    path: '/submissions/:id',
    operation: /* GraphQL */ `
      mutation RestDeleteSubmission(
        $archive: ArchiveSubmissionInput!, $delete: DeleteSubmissionInput!, $permanently: Boolean!
      ) {
        archiveSubmission(input: $archive) @skip(if: $permanently) { submission { id archivedAt } }
        deleteSubmission(input: $delete) @include(if: $permanently) { id archivedAt }
      }
    `,
    variables: (request) => {
      const input = { id: pathId(request, 'Submission') };
      return { archive: input, delete: input, permanently: permanentlyParam(request) };
    },
    serialize: (data: {
      archiveSubmission?: { submission: { id: number; archivedAt: string } };
      deleteSubmission?: { id: number; archivedAt: string | null };
    }) => {
      const submission = data.deleteSubmission ?? data.archiveSubmission!.submission;
      return { id: submission.id, archived_at: submission.archivedAt };
    },
  },
  {
    method: 'GET',
    path: '/submitters',
    operation: submitterReadOperationList,
    variables: (request) => ({
      submissionId: queryInt(request, 'submission_id'),
      templateId: queryInt(request, 'template_id'),
      q: queryString(request, 'q') || undefined,
      externalId: queryString(request, 'external_id') ?? queryString(request, 'application_key'),
      slug: queryString(request, 'slug'),
      completedAfter: queryDate(request, 'completed_after'),
      completedBefore: queryDate(request, 'completed_before'),
      limit: queryInt(request, 'limit'),
      after: queryInt(request, 'after'),
      before: queryInt(request, 'before'),
    }),
    serialize: async (
      { submitters }: { submitters: { nodes: SubmitterReadData[]; pagination: unknown } },
      request,
    ) => ({
      data: await submitterAnswers(submitters.nodes.map(serializeSubmitterRead), request),
      pagination: submitters.pagination,
    }),
  },
  {
    method: 'GET',
    path: '/submitters/:id',
    operation: /* GraphQL */ `
      query RestSubmitter($id: Int!) { submitter(id: $id) { ...RestSubmitterRead } }
      ${SUBMITTER_READ_FRAGMENT}
    `,
    variables: (request) => ({ id: pathId(request, 'Submitter') }),
    serialize: async ({ submitter }: { submitter: SubmitterReadData }, request) =>
      (await submitterAnswers([serializeSubmitterRead(submitter)], request))[0],
  },
  {
    method: ['PUT', 'PATCH'],
    path: '/submitters/:id',
    operation: /* GraphQL */ `
      mutation RestUpdateSubmitter($input: UpdateSubmitterInput!) {
        updateSubmitter(input: $input) { submitter { ...RestSubmitterUpdate } }
      }
      ${SUBMITTER_UPDATE_FRAGMENT}
    `,
    variables: (request) => {
      const outer = bodyObject(request);
      const body = isObject(outer.submitter) ? outer.submitter : outer;
      const id = pathId(request, 'Submitter');
      if (body.fields !== undefined && body.fields !== null && !Array.isArray(body.fields))
        throw new AppError('VALIDATION', 'fields must be a Array');
      return { input: { id, ...restInput(UpdateSubmitterRequest, body, { omit: ['id'] }) } };
    },
    serialize: async ({ updateSubmitter }: { updateSubmitter: { submitter: SubmitterUpdateData } }, request) =>
      (await submitterAnswers([serializeSubmitterUpdate(updateSubmitter.submitter)], request))[0],
  },
];
