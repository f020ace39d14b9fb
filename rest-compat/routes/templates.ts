/**
 * DocuSeal's template routes (interface spec "Templates"; reference §8.2, §12).
 */
import { AppError } from '../../src/errors.ts';
import type { RestRequest, RestRoute } from '../gateway.ts';
import {
  CloneTemplateRequest,
  CreateTemplateFromFileRequest,
  CreateTemplateFromHtmlRequest,
  MergeTemplatesRequest,
  UpdateTemplateDocumentsRequest,
  UpdateTemplateRequest,
} from '../../src/templates/template-requests.ts';
import { bodyObject, isTruthy, pathId, permanentlyParam, queryInt, queryString, restInput } from '../params.ts';
import { serializeTemplate, TEMPLATE_FRAGMENT, type TemplateData } from '../../src/docuseal-shapes/template.ts';
import { requireActor } from '../../src/graphql/context.ts';
import { readTemplateForAccount } from '../../src/templates/read-models.ts';

const listTemplates: RestRoute<{
  templates: { nodes: TemplateData[]; pagination: { count: number; next: number | null; prev: number | null } };
}> = {
  method: 'GET',
  path: '/templates',
  operation: /* GraphQL */ `
    query RestTemplates(
      $q: String, $externalId: String, $folder: String, $archived: Boolean, $slug: String, $shared: Boolean,
      $limit: Int, $after: Int, $before: Int
    ) {
      templates(
        q: $q, externalId: $externalId, folder: $folder, archived: $archived, slug: $slug, shared: $shared,
        limit: $limit, after: $after, before: $before
      ) {
        nodes { ...RestTemplate }
        pagination { count next prev }
      }
    }
    ${TEMPLATE_FRAGMENT}
  `,
  variables: (request) => ({
    q: queryString(request, 'q') || undefined,
    // application_key: the earlier name of external_id (spec "Versioning").
    externalId: queryString(request, 'external_id') ?? queryString(request, 'application_key'),
    folder: queryString(request, 'folder') || undefined,
    archived: isTruthy(queryString(request, 'archived')),
    slug: queryString(request, 'slug'),
    // DocuSeal reads `shared` as `params[:shared].in?(['true', true])`.
    shared: queryString(request, 'shared') === 'true' || undefined,
    limit: queryInt(request, 'limit'),
    after: queryInt(request, 'after'),
    before: queryInt(request, 'before'),
  }),
  serialize: ({ templates }) => ({ data: templates.nodes.map(serializeTemplate), pagination: templates.pagination }),
};

const getTemplate: RestRoute<TemplateData> = {
  method: 'GET',
  path: '/templates/:id',
  operation: /* GraphQL */ `
    query RestTemplate($id: Int!) { template(id: $id) { ...RestTemplate } }
    ${TEMPLATE_FRAGMENT}
  `,
  variables: (request) => ({ id: pathId(request, 'Template') }),
  // The read model the template.* webhooks are made of (src/templates/read-models.ts), so their
  // `data` is this answer by construction; the operation only coerces the id.
  run: (variables, { context }) => {
    const { accountId, folders } = requireActor(context);
    return readTemplateForAccount(context, { id: variables.id as number, accountId, folders });
  },
  serialize: (template) => serializeTemplate(template),
};

export const templateRoutes: RestRoute[] = [listTemplates, getTemplate];

// ---------------------------------------------------------------------------------------------
// Writes. Each reads DocuSeal's JSON body against its input's one definition
// (src/templates/template-requests.ts; restInput) into one mutation's input: only the keys the
// definition has (unknown keys are ignored, as DocuSeal does), cast as Rails casts params, with the
// earlier shape accepted (`application_key`, `{template: {...}}`; spec "Versioning").

type Body = Record<string, unknown>;

const isObject = (value: unknown): value is Body =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A body's key that its definition requires, when absent.
 * @throws AppError VALIDATION "<key> is required." (with " in `<where>`." inside a list)
 */
function requireKey(body: Body, key: string, where?: string): void {
  if (body[key] === undefined || body[key] === null)
    throw new AppError('VALIDATION', `${key} is required${where === undefined ? '.' : ` in \`${where}\`.`}`);
}

/** A field without a name reaches the service as "" (refused there: "name is required"); GraphQL requires one. */
const named = (fields: unknown) => (Array.isArray(fields) ? fields.map((f) => ({ name: '', ...f })) : fields);

/**
 * A body with PDF or DOCX `documents` (and `fields`) read against its definition: POST
 * /templates/pdf and /templates/docx (CreateTemplateFromFileRequest, src/templates/template-requests.ts),
 * POST /submissions/pdf and /submissions/docx (CreateSubmissionFromFileRequest, whose documents
 * and fields are that definition's).
 * @param options.omit keys the caller reads itself
 * @throws AppError VALIDATION "documents is required.", "file is required in `documents[0]`.", DocuSeal's type messages
 */
export function readFileDocumentsBody(
  schema: Parameters<typeof restInput>[0],
  body: Body,
  options: { omit?: string[] } = {},
): Record<string, unknown> {
  requireKey(body, 'documents');
  const input = restInput(schema, body, options);
  (input.documents as Body[]).forEach((doc, i) => {
    requireKey(doc, 'file', `documents[${i}]`);
    doc.fields = named(doc.fields);
  });
  input.fields = named(input.fields);
  return input;
}

/** POST /templates/pdf and /templates/docx (readFileDocumentsBody). */
function fileTemplateInput(request: RestRequest) {
  return { input: readFileDocumentsBody(CreateTemplateFromFileRequest, bodyObject(request)) };
}

interface TemplatePayloadData {
  [mutation: string]: { template: TemplateData; warnings: { code: string; message: string }[] };
}

function createRoute(
  path: string,
  mutation: string,
  inputType: string,
  variables: RestRoute['variables'],
): RestRoute<TemplatePayloadData> {
  return {
    method: 'POST',
    path,
    operation: /* GraphQL */ `
      mutation Rest${mutation[0]!.toUpperCase()}${mutation.slice(1)}($input: ${inputType}!) {
        ${mutation}(input: $input) { template { ...RestTemplate } warnings { code message } }
      }
      ${TEMPLATE_FRAGMENT}
    `,
    variables,
    // DocuSeal's template, plus `warnings` (a key DocuSeal's clients ignore) only when there are some.
    serialize: (data) => {
      const { template, warnings } = data[mutation]!;
      return { ...serializeTemplate(template), ...(warnings.length > 0 ? { warnings } : {}) };
    },
  };
}

const createFromPdf = createRoute(
  '/templates/pdf',
  'createTemplateFromPdf',
  'CreateTemplateFromFileInput',
  fileTemplateInput,
);
const createFromDocx = createRoute(
  '/templates/docx',
  'createTemplateFromDocx',
  'CreateTemplateFromFileInput',
  fileTemplateInput,
);
const createFromHtml = createRoute(
  '/templates/html',
  'createTemplateFromHtml',
  'CreateTemplateFromHtmlInput',
  (request) => {
    const input = restInput(CreateTemplateFromHtmlRequest, bodyObject(request));
    (input.documents as Body[] | undefined)?.forEach((doc, i) => {
      if (!doc.html) throw new AppError('VALIDATION', `html is required in \`documents[${i}]\`.`);
    });
    return { input };
  },
);

const cloneTemplateRoute: RestRoute<TemplatePayloadData> = {
  ...createRoute('/templates/:id/clone', 'cloneTemplate', 'CloneTemplateInput', (request) => {
    const body = bodyObject(request);
    // DocuSeal names the documents as `documents: [{name}]`: the definition's `document_names`.
    const names = Array.isArray(body.documents)
      ? body.documents.map((d) => (isObject(d) && typeof d.name === 'string' ? d.name : null))
      : undefined;
    return {
      input: {
        id: pathId(request, 'Template'),
        ...restInput(CloneTemplateRequest, { ...body, document_names: names }, { omit: ['id'] }),
      },
    };
  }),
};

const updateTemplateRoute: RestRoute<{ updateTemplate: { template: { id: number; updatedAt: string } } }> = {
  method: ['PUT', 'PATCH'],
  path: '/templates/:id',
  operation: /* GraphQL */ `
    mutation RestUpdateTemplate($input: UpdateTemplateInput!) {
      updateTemplate(input: $input) { template { id updatedAt } }
    }
  `,
  variables: (request) => {
    const outer = bodyObject(request);
    // The earlier shape wraps the changes: {template: {folder_name}}.
    const body = isObject(outer.template) ? outer.template : outer;
    // `fields` and `submitters` (DocuSeal's template_params) replace the template's lists.
    const input = restInput(UpdateTemplateRequest, body, { omit: ['id'] });
    if (input.fields !== undefined) input.fields = named(input.fields);
    return { input: { id: pathId(request, 'Template'), ...input } };
  },
  serialize: ({ updateTemplate }) => ({
    id: updateTemplate.template.id,
    updated_at: updateTemplate.template.updatedAt,
  }),
};

/**
 * DELETE /templates/{id}: archives (template.archived), or with `permanently` true deletes
 * (deleteTemplate, no event); `{id, archived_at}` either way (DocuSeal's TemplatesController#destroy).
 * One operation, the mutation chosen by `$permanently`.
 */
const deleteTemplateRoute: RestRoute<{
  archiveTemplate?: { template: { id: number; archivedAt: string } };
  deleteTemplate?: { id: number; archivedAt: string | null };
}> = {
  method: 'DELETE',
  path: '/templates/:id',
  operation: /* GraphQL */ `
    mutation RestDeleteTemplate(
      $archive: ArchiveTemplateInput!, $delete: DeleteTemplateInput!, $permanently: Boolean!
    ) {
      archiveTemplate(input: $archive) @skip(if: $permanently) { template { id archivedAt } }
      deleteTemplate(input: $delete) @include(if: $permanently) { id archivedAt }
    }
  `,
  variables: (request) => {
    const input = { id: pathId(request, 'Template') };
    return { archive: input, delete: input, permanently: permanentlyParam(request) };
  },
  serialize: ({ archiveTemplate, deleteTemplate }) => {
    const template = deleteTemplate ?? archiveTemplate!.template;
    return { id: template.id, archived_at: template.archivedAt };
  },
};

const updateDocumentsRoute: RestRoute<TemplatePayloadData> = {
  ...createRoute('/templates/:id/documents', 'updateTemplateDocuments', 'UpdateTemplateDocumentsInput', (request) => {
    const body = bodyObject(request);
    requireKey(body, 'documents');
    const input = restInput(UpdateTemplateDocumentsRequest, body, { omit: ['id'] });
    // An empty `file` or `html` is none.
    for (const doc of input.documents as Body[]) {
      if (doc.file === '') delete doc.file;
      if (doc.html === '') delete doc.html;
    }
    return { input: { id: pathId(request, 'Template'), ...input } };
  }),
  method: 'PUT',
};

const mergeRoute = createRoute('/templates/merge', 'mergeTemplates', 'MergeTemplatesInput', (request) => {
  const body = bodyObject(request);
  requireKey(body, 'template_ids');
  return { input: restInput(MergeTemplatesRequest, body) };
});

export const templateWriteRoutes: RestRoute[] = [
  mergeRoute,
  updateDocumentsRoute,
  createFromPdf,
  createFromDocx,
  createFromHtml,
  cloneTemplateRoute,
  updateTemplateRoute,
  deleteTemplateRoute,
];
