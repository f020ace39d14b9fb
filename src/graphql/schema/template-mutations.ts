/**
 * Template mutations: create from PDF, DOCX or HTML; update; archive; delete; clone. Each takes one
 * `input` and returns a payload with the template. The REST routes call these same mutations.
 */
import type { z } from 'zod';
import { parsePaperSize } from '../../rendering/renderer.ts';
import { RequestArea, RequestCondition, RequestField, type RequestFieldGroup } from '../../templates/build-fields.ts';
import { parseInput } from '../../accounts/api-keys.ts';
import { findTemplateForAccount } from '../../templates/find-template.ts';
import { checkFolderNameInKeyFolders } from '../../templates/folders.ts';
import { mergeTemplates } from '../../templates/merge-templates.ts';
import {
  prepareChangedDocument,
  inDocumentOrder,
  prepareDocxDocuments,
  prepareHtmlDocuments,
  preparePdfDocuments,
} from '../../templates/prepare-documents.ts';
import { updateTemplateDocuments, type PreparedOperation } from '../../templates/update-documents.ts';
import { checkTemplateRequest, saveTemplate, type PreparedDocument } from '../../templates/save-template.ts';
import { archiveTemplate, cloneTemplate, deleteTemplate, updateTemplate } from '../../templates/template-actions.ts';
import { TEMPLATE_WARNING_CODES, templateWarnings, type TemplateWarning } from '../../templates/template-warnings.ts';
import {
  CloneTemplateRequest,
  CreateTemplateFromFileRequest,
  CreateTemplateFromHtmlRequest,
  DocumentOperation,
  MergeTemplatesRequest,
  RequestRole,
  requestFieldGroups,
  TemplateFileDocument,
  TemplateHtmlDocument,
  UpdateTemplateDocumentsRequest,
  UpdateTemplateRequest,
} from '../../templates/template-requests.ts';
import { builder } from '../builder.ts';
import { requireActor, requireViewer, type GraphQLContext } from '../context.ts';
import { fromGraphQLInput, zodInputType } from '../zod-input.ts';
import { TemplateRef } from './template.ts';

// A create request's field and its areas, derived from their one definition (src/templates/build-fields.ts).
zodInputType('FieldAreaInput', RequestArea);
zodInputType('FieldConditionInput', RequestCondition);
zodInputType('TemplateFieldInput', RequestField);

// The create requests, derived from their one definition (src/templates/template-requests.ts).
zodInputType('TemplateFileDocumentInput', TemplateFileDocument);
const CreateFromFileInput = zodInputType('CreateTemplateFromFileInput', CreateTemplateFromFileRequest);
zodInputType('TemplateHtmlDocumentInput', TemplateHtmlDocument);
const CreateFromHtmlInput = zodInputType('CreateTemplateFromHtmlInput', CreateTemplateFromHtmlRequest);

const TemplateWarningRef = builder.objectRef<TemplateWarning>('TemplateWarning').implement({
  description: 'Something about an accepted template to know before using it.',
  fields: (t) => ({
    code: t.exposeString('code', { description: `${TEMPLATE_WARNING_CODES.join(', ')}.` }),
    message: t.exposeString('message'),
  }),
});

const TemplatePayload = builder.objectRef<{ id: number }>('TemplatePayload').implement({
  fields: (t) => ({
    template: t.prismaField({
      type: TemplateRef,
      resolve: (query, payload, _args, ctx) =>
        ctx.db.template.findUniqueOrThrow({ ...query, where: { id: payload.id } }),
    }),
    warnings: t.field({
      type: [TemplateWarningRef],
      description:
        'What the template lacks to be used, as it is after the change: TEMPLATE_HAS_NO_FIELDS when it has no ' +
        'fields (a submission from it would be refused). [] when none.',
      resolve: async (payload, _args, ctx) =>
        templateWarnings(
          await ctx.db.template.findUniqueOrThrow({ where: { id: payload.id }, select: { fields: true } }),
        ),
    }),
  }),
});

async function save(
  ctx: GraphQLContext,
  documents: PreparedDocument[],
  request: { name?: string; external_id?: string; folder_name?: string; shared_link?: boolean },
  requestFields: RequestFieldGroup[],
) {
  const { accountId, userId, folders } = requireActor(ctx);
  const { templateId } = await saveTemplate(ctx, {
    accountId,
    userId,
    folders,
    name: request.name,
    externalId: request.external_id,
    folderName: request.folder_name,
    sharedLink: request.shared_link,
    source: 'api',
    documents,
    requestFields,
  });
  return { id: templateId };
}

/**
 * Refuses a folder outside the folders of the caller's key before the documents are read or
 * converted (saveTemplate checks again where it finds or creates the folder).
 */
async function checkFolder(ctx: GraphQLContext, folderName: string | undefined): Promise<void> {
  const { accountId, folders } = requireActor(ctx);
  await checkFolderNameInKeyFolders(ctx.db, { accountId, folders, fullName: folderName });
}

/** A create-from-file input in the definition's keys, its sizes and fields checked. */
function fileRequest(input: unknown): z.input<typeof CreateTemplateFromFileRequest> {
  const request = fromGraphQLInput(CreateTemplateFromFileRequest, input);
  checkTemplateRequest(CreateTemplateFromFileRequest, request);
  return request;
}

builder.mutationField('createTemplateFromPdf', (t) =>
  t.field({
    type: TemplatePayload,
    description:
      'Creates a template from PDFs (fields from `fields` and/or {{text tags}}), or updates the one with `externalId`.',
    args: { input: t.arg({ type: CreateFromFileInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account } = requireViewer(ctx);
      const request = fileRequest(input);
      await checkFolder(ctx, request.folder_name);
      const deps = { config: ctx.config, renderer: ctx.renderer, accountId: account.id };
      const prepared = await preparePdfDocuments(deps, request.documents, {
        removeTags: request.remove_tags,
        flatten: request.flatten,
      });
      const { documents, requestFields } = inDocumentOrder(prepared, request.documents, requestFieldGroups(request));
      return save(ctx, documents, request, requestFields);
    },
  }),
);

builder.mutationField('createTemplateFromDocx', (t) =>
  t.field({
    type: TemplatePayload,
    description: 'Creates a template from Word DOCX files (converted to PDF), or updates the one with `externalId`.',
    args: { input: t.arg({ type: CreateFromFileInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account } = requireViewer(ctx);
      const request = fileRequest(input);
      await checkFolder(ctx, request.folder_name);
      const deps = { config: ctx.config, renderer: ctx.renderer, accountId: account.id };
      const prepared = await prepareDocxDocuments(deps, request.documents, {
        removeTags: request.remove_tags,
        flatten: request.flatten,
      });
      const { documents, requestFields } = inDocumentOrder(prepared, request.documents, requestFieldGroups(request));
      return save(ctx, documents, request, requestFields);
    },
  }),
);

builder.mutationField('createTemplateFromHtml', (t) =>
  t.field({
    type: TemplatePayload,
    description: 'Creates a template from HTML with field tags, or updates the one with `externalId`.',
    args: { input: t.arg({ type: CreateFromHtmlInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account } = requireViewer(ctx);
      const request = fromGraphQLInput(CreateTemplateFromHtmlRequest, input);
      checkTemplateRequest(CreateTemplateFromHtmlRequest, request);
      await checkFolder(ctx, request.folder_name);
      const name = request.name?.trim() || crypto.randomUUID();
      const prepared = await prepareHtmlDocuments(
        { config: ctx.config, renderer: ctx.renderer, accountId: account.id },
        {
          html: request.html,
          documents: request.documents,
          header: request.html_header,
          footer: request.html_footer,
          size: parsePaperSize(request.size),
          name,
        },
      );
      const { documents } = inDocumentOrder(prepared, request.documents ?? []);
      return save(ctx, documents, { ...request, name }, []);
    },
  }),
);

zodInputType('TemplateRoleInput', RequestRole);
const UpdateTemplateInputRef = zodInputType('UpdateTemplateInput', UpdateTemplateRequest);

builder.mutationField('updateTemplate', (t) =>
  t.field({
    type: TemplatePayload,
    args: { input: t.arg({ type: UpdateTemplateInputRef, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const actor = requireActor(ctx);
      const { id, ...changes } = fromGraphQLInput(UpdateTemplateRequest, input);
      // template.updated on every call, even without a change; template.archived when this archived it.
      // `fields` and `submitters` replace the template's lists (template-actions.ts updateTemplate).
      await updateTemplate(ctx, actor, id, changes);
      return { id };
    },
  }),
);

const ArchiveTemplateInput = builder.inputType('ArchiveTemplateInput', {
  fields: (t) => ({ id: t.int({ required: true }) }),
});

builder.mutationField('archiveTemplate', (t) =>
  t.field({
    type: TemplatePayload,
    description: 'Archives a template (it stays readable; it can no longer be used for new submissions).',
    args: { input: t.arg({ type: ArchiveTemplateInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      await archiveTemplate(ctx, requireActor(ctx), input.id);
      // On every call, as DocuSeal's DELETE /templates/{id} (reference §6, §8.2).
      return { id: input.id };
    },
  }),
);

const DeleteTemplateInput = builder.inputType('DeleteTemplateInput', {
  fields: (t) => ({ id: t.int({ required: true }) }),
});

const DeleteTemplatePayload = builder
  .objectRef<{ id: number; archivedAt: Date | null }>('DeleteTemplatePayload')
  .implement({
    description: 'The deleted template as it was: its id and archive time (null when it was not archived).',
    fields: (t) => ({
      id: t.exposeInt('id'),
      archivedAt: t.expose('archivedAt', { type: 'DateTime', nullable: true }),
    }),
  });

builder.mutationField('deleteTemplate', (t) =>
  t.field({
    type: DeleteTemplatePayload,
    description:
      'Deletes a template permanently, with all its submissions (their submitters, events, completed documents ' +
      'and messages), the webhook deliveries of their events, and the stored files nothing else uses; a file a ' +
      'clone still uses stays. No event is raised. REST: DELETE /templates/{id}?permanently=true.',
    args: { input: t.arg({ type: DeleteTemplateInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      return deleteTemplate(ctx, requireActor(ctx), input.id);
    },
  }),
);

const CloneTemplateInputRef = zodInputType('CloneTemplateInput', CloneTemplateRequest);

builder.mutationField('cloneTemplate', (t) =>
  t.field({
    type: TemplatePayload,
    args: { input: t.arg({ type: CloneTemplateInputRef, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const actor = requireActor(ctx);
      const { id, ...options } = fromGraphQLInput(CloneTemplateRequest, input);
      const cloneId = await cloneTemplate(ctx, actor, id, options);
      return { id: cloneId };
    },
  }),
);

zodInputType('TemplateDocumentChangeInput', DocumentOperation);
const UpdateDocumentsInput = zodInputType('UpdateTemplateDocumentsInput', UpdateTemplateDocumentsRequest);

builder.mutationField('updateTemplateDocuments', (t) =>
  t.field({
    type: TemplatePayload,
    description:
      "Adds, replaces or removes a template's documents; a replaced document's fields move to the new one " +
      'when it brings none.',
    args: { input: t.arg({ type: UpdateDocumentsInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const actor = requireActor(ctx);
      const request = parseInput(
        UpdateTemplateDocumentsRequest,
        fromGraphQLInput(UpdateTemplateDocumentsRequest, input),
      );
      await findTemplateForAccount(ctx.db, { id: request.id, ...actor });
      const operations: PreparedOperation[] = [];
      for (const [i, op] of request.documents.entries()) {
        operations.push(
          op.remove
            ? op
            : {
                ...op,
                prepared: await prepareChangedDocument(
                  { config: ctx.config, renderer: ctx.renderer, accountId: actor.accountId },
                  op,
                  i,
                ),
              },
        );
      }
      await updateTemplateDocuments(ctx, actor, request.id, operations, {
        merge: request.merge ?? false,
      });
      return { id: request.id };
    },
  }),
);

const MergeInput = zodInputType('MergeTemplatesInput', MergeTemplatesRequest);

builder.mutationField('mergeTemplates', (t) =>
  t.field({
    type: TemplatePayload,
    description: 'A new template with the documents, roles (merged by name) and fields of several templates.',
    args: { input: t.arg({ type: MergeInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const id = await mergeTemplates(ctx, requireActor(ctx), fromGraphQLInput(MergeTemplatesRequest, input));
      return { id };
    },
  }),
);
