/**
 * DocuSeal's template routes (interface spec "Templates"; reference §8.2, §12).
 */
import { AppError } from '../../src/errors.ts';
import type { RestRequest, RestRoute } from '../gateway.ts';
import { RequestField } from '../../src/templates/build-fields.ts';
import { bodyObject, isTruthy, optionalStringList, pathId, queryInt, queryString, restInput } from '../params.ts';
import { serializeTemplate, TEMPLATE_FRAGMENT, type TemplateData } from '../../src/docuseal-shapes/template.ts';

const listTemplates: RestRoute<{
  templates: { nodes: TemplateData[]; pagination: { count: number; next: number | null; prev: number | null } };
}> = {
  method: 'GET',
  path: '/templates',
  operation: /* GraphQL */ `
    query RestTemplates($q: String, $externalId: String, $folder: String, $archived: Boolean, $slug: String, $limit: Int, $after: Int, $before: Int) {
      templates(q: $q, externalId: $externalId, folder: $folder, archived: $archived, slug: $slug, limit: $limit, after: $after, before: $before) {
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
    limit: queryInt(request, 'limit'),
    after: queryInt(request, 'after'),
    before: queryInt(request, 'before'),
  }),
  serialize: ({ templates }) => ({ data: templates.nodes.map(serializeTemplate), pagination: templates.pagination }),
};

const getTemplate: RestRoute<{ template: TemplateData }> = {
  method: 'GET',
  path: '/templates/:id',
  operation: /* GraphQL */ `
    query RestTemplate($id: Int!) { template(id: $id) { ...RestTemplate } }
    ${TEMPLATE_FRAGMENT}
  `,
  variables: (request) => ({ id: pathId(request, 'Template') }),
  serialize: ({ template }) => serializeTemplate(template),
};

export const templateRoutes: RestRoute[] = [listTemplates, getTemplate];

// ---------------------------------------------------------------------------------------------
// Writes. Each maps DocuSeal's JSON body onto one mutation's input, picking the keys DocuSeal
// knows (unknown keys are ignored, as DocuSeal does) and accepting the earlier shape
// (`application_key`, `{template: {...}}`; spec "Versioning").

type FieldBody = Record<string, unknown>;

/**
 * A request's fields (DocuSeal field JSON) as TemplateFieldInput values, read against the field's
 * one definition (RequestField; restInput); validation of values is the service's. Two things of
 * DocuSeal's wire shape: `options` may be given as the template answers them ([{value, uuid}]),
 * and a field without a name reaches the service as "" (refused there: "name is required").
 * @param path where the list is ("fields", "documents[0].fields")
 */
function fieldList(value: unknown, path: string): unknown[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw new AppError('VALIDATION', 'fields must be an array.');
  return value.map((raw, i) => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
    const f = raw as FieldBody;
    const options = Array.isArray(f.options)
      ? f.options.map((o) => (typeof o === 'object' && o !== null ? String((o as FieldBody).value ?? '') : o))
      : f.options;
    return { name: '', ...restInput(RequestField, { ...f, options }, { where: `${path}[${i}]` }) };
  });
}

function stringOrUndefined(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new AppError('VALIDATION', `${name} must be a string.`);
  return value;
}

function fileTemplateInput(request: RestRequest) {
  const body = bodyObject(request);
  const documents = body.documents;
  if (documents === undefined || documents === null) throw new AppError('VALIDATION', 'documents is required.');
  if (!Array.isArray(documents)) throw new AppError('VALIDATION', 'documents must be an array.');
  return {
    input: {
      name: stringOrUndefined(body.name, 'name'),
      externalId: stringOrUndefined(body.external_id ?? body.application_key, 'external_id'),
      folderName: stringOrUndefined(body.folder_name, 'folder_name'),
      sharedLink: typeof body.shared_link === 'boolean' ? body.shared_link : undefined,
      documents: documents.map((doc, i) => {
        if (typeof doc !== 'object' || doc === null)
          throw new AppError('VALIDATION', `\`documents[${i}]\` must be an object.`);
        const d = doc as FieldBody;
        if (typeof d.file !== 'string' || d.file === '')
          throw new AppError('VALIDATION', `file is required in \`documents[${i}]\`.`);
        return {
          name: stringOrUndefined(d.name, `name in documents[${i}]`),
          file: d.file,
          fields: fieldList(d.fields, `documents[${i}].fields`),
        };
      }),
      fields: fieldList(body.fields, 'fields'),
    },
  };
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
    const body = bodyObject(request);
    const documents = body.documents;
    return {
      input: {
        html: stringOrUndefined(body.html, 'html'),
        htmlHeader: stringOrUndefined(body.html_header, 'html_header'),
        htmlFooter: stringOrUndefined(body.html_footer, 'html_footer'),
        name: stringOrUndefined(body.name, 'name'),
        size: stringOrUndefined(body.size, 'size'),
        externalId: stringOrUndefined(body.external_id ?? body.application_key, 'external_id'),
        folderName: stringOrUndefined(body.folder_name, 'folder_name'),
        sharedLink: typeof body.shared_link === 'boolean' ? body.shared_link : undefined,
        documents: Array.isArray(documents)
          ? documents.map((doc, i) => {
              const d = (doc ?? {}) as FieldBody;
              if (typeof d.html !== 'string' || d.html === '')
                throw new AppError('VALIDATION', `html is required in \`documents[${i}]\`.`);
              return { html: d.html, name: stringOrUndefined(d.name, `name in documents[${i}]`) };
            })
          : undefined,
      },
    };
  },
);

const cloneTemplateRoute: RestRoute<TemplatePayloadData> = {
  ...createRoute('/templates/:id/clone', 'cloneTemplate', 'CloneTemplateInput', (request) => {
    const body = bodyObject(request);
    return {
      input: {
        id: pathId(request, 'Template'),
        name: stringOrUndefined(body.name, 'name'),
        folderName: stringOrUndefined(body.folder_name, 'folder_name'),
        externalId: stringOrUndefined(body.external_id ?? body.application_key, 'external_id'),
        documentNames: Array.isArray(body.documents)
          ? body.documents.map((d) =>
              typeof (d as FieldBody)?.name === 'string' ? ((d as FieldBody).name as string) : null,
            )
          : undefined,
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
    const body =
      typeof outer.template === 'object' && outer.template !== null && !Array.isArray(outer.template)
        ? (outer.template as FieldBody)
        : outer;
    const roles = optionalStringList(body.roles, 'roles');
    const archived = body.archived === undefined || body.archived === null ? undefined : isTruthy(body.archived);
    return {
      input: {
        id: pathId(request, 'Template'),
        name: stringOrUndefined(body.name, 'name'),
        folderName: stringOrUndefined(body.folder_name, 'folder_name'),
        externalId: stringOrUndefined(body.external_id ?? body.application_key, 'external_id'),
        sharedLink: typeof body.shared_link === 'boolean' ? body.shared_link : undefined,
        roles,
        archived,
      },
    };
  },
  serialize: ({ updateTemplate }) => ({
    id: updateTemplate.template.id,
    updated_at: updateTemplate.template.updatedAt,
  }),
};

const archiveTemplateRoute: RestRoute<{ archiveTemplate: { template: { id: number; archivedAt: string } } }> = {
  method: 'DELETE',
  path: '/templates/:id',
  operation: /* GraphQL */ `
    mutation RestArchiveTemplate($input: ArchiveTemplateInput!) {
      archiveTemplate(input: $input) { template { id archivedAt } }
    }
  `,
  variables: (request) => ({ input: { id: pathId(request, 'Template') } }),
  serialize: ({ archiveTemplate }) => ({
    id: archiveTemplate.template.id,
    archived_at: archiveTemplate.template.archivedAt,
  }),
};

const updateDocumentsRoute: RestRoute<TemplatePayloadData> = {
  ...createRoute('/templates/:id/documents', 'updateTemplateDocuments', 'UpdateTemplateDocumentsInput', (request) => {
    const body = bodyObject(request);
    if (!Array.isArray(body.documents)) throw new AppError('VALIDATION', 'documents must be an array.');
    return {
      input: {
        id: pathId(request, 'Template'),
        merge: body.merge === undefined || body.merge === null ? undefined : isTruthy(body.merge),
        documents: body.documents.map((doc, i) => {
          if (typeof doc !== 'object' || doc === null)
            throw new AppError('VALIDATION', `\`documents[${i}]\` must be an object.`);
          const d = doc as FieldBody;
          const position = d.position === undefined || d.position === null ? undefined : Number(d.position);
          if (position !== undefined && !Number.isInteger(position))
            throw new AppError('VALIDATION', `position must be an integer in \`documents[${i}]\`.`);
          return {
            name: stringOrUndefined(d.name, `name in documents[${i}]`),
            file: stringOrUndefined(d.file, `file in documents[${i}]`) || undefined,
            html: stringOrUndefined(d.html, `html in documents[${i}]`) || undefined,
            position,
            replace: d.replace === undefined ? undefined : isTruthy(d.replace),
            remove: d.remove === undefined ? undefined : isTruthy(d.remove),
          };
        }),
      },
    };
  }),
  method: 'PUT',
};

const mergeRoute = createRoute('/templates/merge', 'mergeTemplates', 'MergeTemplatesInput', (request) => {
  const body = bodyObject(request);
  const ids = body.template_ids;
  if (!Array.isArray(ids) || ids.some((id) => !Number.isInteger(Number(id))))
    throw new AppError('VALIDATION', 'template_ids must be an array of template ids.');
  const roles = optionalStringList(body.roles, 'roles');
  return {
    input: {
      templateIds: ids.map(Number),
      name: stringOrUndefined(body.name, 'name'),
      folderName: stringOrUndefined(body.folder_name, 'folder_name'),
      externalId: stringOrUndefined(body.external_id ?? body.application_key, 'external_id'),
      sharedLink: typeof body.shared_link === 'boolean' ? body.shared_link : undefined,
      roles,
    },
  };
});

export const templateWriteRoutes: RestRoute[] = [
  mergeRoute,
  updateDocumentsRoute,
  createFromPdf,
  createFromDocx,
  createFromHtml,
  cloneTemplateRoute,
  updateTemplateRoute,
  archiveTemplateRoute,
];
