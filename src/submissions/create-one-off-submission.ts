/**
 * One-off submissions (OpenAPI `POST /submissions/pdf`, `/submissions/docx`, `/submissions/html`;
 * GraphQL `createSubmissionFromPdf|Docx|Html`): a template made from the request's documents
 * ({{text tags}}, HTML field tags, `fields`) and one submission of it, in one call.
 *
 * DocuSeal (Pro; lib/submissions/create_from_submitters.rb with `with_template: false`) builds
 * the template in memory and stores only the submission, with the template's roles, fields and
 * documents copied into it and no template (`template_id` null); its name defaults to the
 * template's. Signet's submissions always belong to a template, so the one-off template is stored,
 * marked `source: "one_off"` (ONE_OFF_TEMPLATE_SOURCE): it is not listed among the templates
 * (GET /templates, GraphQL `templates`) and sends no template.* webhooks; the submission keeps its
 * own copy as every submission does. docs/compatibility.md "One-off submissions".
 *
 * Order: the submission part is read first (its sizes and shapes: cheap, and DocuSeal's validator
 * runs before anything), then the template part; the documents are prepared (loaded, converted,
 * text tags found), the template planned and the submission planned on its roles and fields —
 * every refusal happens by then — and one transaction writes the template, its documents and the
 * submission with what it causes (the outbox). A refusal leaves nothing behind.
 */
import type { z } from 'zod';
import { parseInput } from '../accounts/api-keys.ts';
import type { KeyFolders } from '../accounts/key-scopes.ts';
import { AppError } from '../errors.ts';
import { DEFAULT_PAPER_SIZE, type Renderer } from '../rendering/renderer.ts';
import type { SchemaDocument } from '../templates/fields.ts';
import {
  inDocumentOrder,
  prepareDocxDocuments,
  prepareHtmlDocuments,
  preparePdfDocuments,
} from '../templates/prepare-documents.ts';
import type { Db } from '../db/client.ts';
import { checkItems, MAX_ITEMS } from '../limits.ts';
import { checkTemplateFieldsSize } from '../templates/build-fields.ts';
import { findTemplateForAccount } from '../templates/find-template.ts';
import { appendTemplateContent, type MergedContent } from '../templates/merge-templates.ts';
import {
  ONE_OFF_TEMPLATE_SOURCE,
  type PlannedTemplate,
  planTemplate,
  type SaveTemplateInput,
  writeTemplate,
} from '../templates/save-template.ts';
import { NO_FIELDS_MESSAGE } from '../templates/template-warnings.ts';
import { CreateTemplateFromFileRequest, requestFieldGroups } from '../templates/template-requests.ts';
import { type CreateSubmissionsForRequestDeps, readSubmissionsRequest } from './create-submissions-request.ts';
import { type CreatedSubmission, insertPlannedSubmissions, planSubmissions } from './create-submissions.ts';
import {
  type CreateSubmissionFromFileRequest,
  CreateSubmissionFromHtmlRequest,
  OneOffSubmissionPart,
} from './one-off-requests.ts';

/** What the documents are: PDF files, DOCX files, or HTML. */
export type OneOffKind = 'pdf' | 'docx' | 'html';

export interface OneOffDeps extends CreateSubmissionsForRequestDeps {
  renderer: Renderer;
}

/** A one-off request, in DocuSeal's keys, by kind (not yet parsed). */
export type OneOffRequest =
  | { kind: 'pdf' | 'docx'; input: z.input<typeof CreateSubmissionFromFileRequest> }
  | { kind: 'html'; input: z.input<typeof CreateSubmissionFromHtmlRequest> };

/** What createOneOffSubmission made. */
export interface CreatedOneOffSubmission {
  /** The submission as stored (its copy of roles and fields, its submitters). */
  submission: CreatedSubmission;
  /** Its name as stored: the request's `name`, else the template's. */
  name: string;
  /** "preserved" or "random", as stored. */
  submittersOrder: string;
  /** "api" (§5.1). */
  source: string;
  templateId: number;
  /** The documents in order (DocuSeal `schema`: attachment_uuid, name). */
  schema: SchemaDocument[];
}

/**
 * Creates a one-off template from the request's documents and one submission of it, acting for
 * `viewer` (see the module comment); the requests (emails, SMS), expiry, completions and
 * `submission.created` are written with them.
 * @returns the submission, its name and order, the template's id and document order
 * @throws AppError VALIDATION: the submission part's (createSubmissionsForRequest's messages:
 *   "submitters is required", "email is invalid in `submitters[0]`.", …), the documents' ("file in
 *   `documents[0]` is not a PDF document.", bad tags, areas), no field at all ("Template does not
 *   contain fields: …"), over a template's limits with `template_ids`; NOT_FOUND / FORBIDDEN for a
 *   template of `template_ids`; UNAVAILABLE without a DOCX/HTML renderer
 */
export async function createOneOffSubmission(
  deps: OneOffDeps,
  viewer: { accountId: number; userId: number; folders?: KeyFolders | null | undefined },
  request: OneOffRequest,
): Promise<CreatedOneOffSubmission> {
  const read = readSubmissionsRequest(deps, request.input);
  const folders = viewer.folders ?? null;
  const included = await readIncludedTemplates(deps.db, { ...viewer, folders }, request.input.template_ids ?? []);
  const prepareDeps = { config: deps.config, renderer: deps.renderer, accountId: viewer.accountId };
  let template: SaveTemplateInput;
  // Not shared: nobody but its submitters is meant to fill it in. A key limited to folders puts
  // it in its first folder, so that the submission is one it sees.
  const base = {
    accountId: viewer.accountId,
    userId: viewer.userId,
    folders,
    source: ONE_OFF_TEMPLATE_SOURCE,
    sharedLink: false,
  };
  if (request.kind === 'html') {
    const input = parseInput(CreateSubmissionFromHtmlRequest.pick({ documents: true, name: true }), request.input);
    // prepareHtmlDocuments reads no `documents` as "the top-level html": this request has none.
    if (input.documents.length === 0) throw new AppError('VALIDATION', 'documents must not be empty.');
    const name = input.name?.trim() || crypto.randomUUID();
    const { documents } = inDocumentOrder(
      await prepareHtmlDocuments(prepareDeps, { documents: input.documents, size: DEFAULT_PAPER_SIZE, name }),
      input.documents,
    );
    template = { ...base, name: input.name?.trim() || documents[0]?.name, documents, requestFields: [] };
  } else {
    const input = parseInput(
      CreateTemplateFromFileRequest.pick({
        documents: true,
        fields: true,
        name: true,
        remove_tags: true,
        flatten: true,
      }),
      {
        documents: request.input.documents,
        fields: request.input.fields,
        name: request.input.name,
        remove_tags: request.input.remove_tags,
        flatten: request.input.flatten,
      },
    );
    const prepare = request.kind === 'pdf' ? preparePdfDocuments : prepareDocxDocuments;
    const prepared = await prepare(prepareDeps, input.documents, {
      removeTags: input.remove_tags,
      flatten: input.flatten,
    });
    const { documents, requestFields } = inDocumentOrder(prepared, input.documents, requestFieldGroups(input));
    template = { ...base, name: input.name, documents, requestFields };
  }
  const planned = await planTemplate(deps, { ...template, mergeDocuments: request.input.merge_documents });
  if (included.length > 0) includeTemplates(planned, included);
  if (planned.fields.length === 0) {
    throw new AppError(
      'VALIDATION',
      `${NO_FIELDS_MESSAGE}: the documents have no fields to fill in or sign; ` +
        'add {{text tags}} to them (HTML: field tags) or give `fields`.',
    );
  }
  const name = read.settings.name || template.name || template.documents[0]?.name || 'Template';
  const options = { ...read, settings: { ...read.settings, name }, accountId: viewer.accountId, userId: viewer.userId };
  const submissions = await planSubmissions(deps, options, { roles: planned.roles, fields: planned.fields });

  const now = new Date();
  const written = await deps.db.$transaction(async (tx) => {
    const { templateId } = await writeTemplate(tx, deps.storage, template, planned);
    const inserted = await insertPlannedSubmissions(tx, deps, { ...options, templateId }, submissions, now);
    return { templateId, ...inserted };
  });
  await deps.effects.committed(written.effects);
  const submission = written.created[0]!;
  return {
    submission,
    name,
    submittersOrder: submissions.plans[0]!.order,
    source: read.source,
    templateId: written.templateId,
    schema: planned.schema,
  };
}

type IncludedTemplate = Parameters<typeof appendTemplateContent>[1];

/**
 * The templates of `template_ids`, in that order, each the caller's (the tenant check of
 * findTemplateForAccount: 404, then 403; within its key's folders): their roles, fields and documents.
 * @throws AppError VALIDATION (sizes), NOT_FOUND, FORBIDDEN
 */
async function readIncludedTemplates(
  db: Db,
  caller: { accountId: number; folders: KeyFolders | null },
  ids: number[],
): Promise<IncludedTemplate[]> {
  if (ids.length === 0) return [];
  const { accountId, folders } = caller;
  parseInput(OneOffSubmissionPart.pick({ template_ids: true }), { template_ids: ids });
  for (const id of ids) await findTemplateForAccount(db, { id, accountId, folders });
  const rows = await db.template.findMany({
    where: { id: { in: ids }, accountId },
    select: {
      id: true,
      submitters: true,
      fields: true,
      documents: { orderBy: { position: 'asc' }, select: { uuid: true, fileId: true, name: true } },
    },
  });
  return ids.map((id) => rows.find((row) => row.id === id)!);
}

/**
 * Adds the included templates to the one-off template, after its own documents (their roles
 * merged by name with its own, as POST /templates/merge merges them; mergeTemplates'
 * appendTemplateContent). When the given documents have no field, their default role is dropped.
 * @throws AppError VALIDATION when the result is over a template's limits (src/limits.ts)
 */
function includeTemplates(planned: PlannedTemplate, included: IncludedTemplate[]): void {
  const merged: MergedContent = {
    roles: planned.fields.length > 0 ? [...planned.roles] : [],
    fields: [...planned.fields],
    documents: [],
  };
  for (const source of included) appendTemplateContent(merged, source);
  checkTemplateFieldsSize(merged.fields, merged.roles);
  checkItems([...planned.staged, ...merged.documents], MAX_ITEMS.documents, 'documents');
  planned.roles = merged.roles;
  planned.fields = merged.fields;
  planned.linked = merged.documents;
  planned.schema = [...planned.schema, ...merged.documents.map((d) => ({ attachment_uuid: d.uuid, name: d.name }))];
}
