/**
 * Template mutations: create from PDF, DOCX or HTML; update; archive; clone. Each takes one
 * `input` and returns a payload with the template. The REST routes call these same mutations.
 */
import { parsePaperSize } from '../../rendering/renderer.ts';
import { RequestArea, RequestField, type RequestFieldGroup } from '../../templates/build-fields.ts';
import { parseInput } from '../../accounts/api-keys.ts';
import { findTemplateForAccount } from '../../templates/find-template.ts';
import { mergeTemplates } from '../../templates/merge-templates.ts';
import {
  prepareChangedDocument,
  prepareDocxDocuments,
  prepareHtmlDocuments,
  preparePdfDocuments,
} from '../../templates/prepare-documents.ts';
import {
  DocumentOperation,
  updateTemplateDocuments,
  type PreparedOperation,
} from '../../templates/update-documents.ts';
import { checkItems, MAX_ITEMS } from '../../limits.ts';
import { checkTemplateRequest, saveTemplate, type PreparedDocument } from '../../templates/save-template.ts';
import { archiveTemplate, cloneTemplate, updateTemplate } from '../../templates/template-actions.ts';
import { TEMPLATE_WARNING_CODES, templateWarnings, type TemplateWarning } from '../../templates/template-warnings.ts';
import { builder } from '../builder.ts';
import { requireViewer, type GraphQLContext } from '../context.ts';
import { fromGraphQLInput, zodInputType } from '../zod-input.ts';
import { TemplateRef, withoutNulls } from './template.ts';

// A create request's field and its areas, derived from their one definition (src/templates/build-fields.ts).
zodInputType('FieldAreaInput', RequestArea);
const FieldInput = zodInputType('TemplateFieldInput', RequestField);

const FileDocumentInput = builder.inputType('TemplateFileDocumentInput', {
  fields: (t) => ({
    name: t.string(),
    file: t.string({ required: true, description: 'Base64 of the file, or an http(s) URL to download it from.' }),
    fields: t.field({ type: [FieldInput], description: 'Fields on this document (areas on its pages).' }),
  }),
});

const CreateFromFileInput = builder.inputType('CreateTemplateFromFileInput', {
  fields: (t) => ({
    name: t.string(),
    externalId: t.string({ description: 'An existing template with it is updated with the new documents.' }),
    folderName: t.string({ description: 'Full folder name ("Parent / Child"), created when missing.' }),
    sharedLink: t.boolean(),
    documents: t.field({ type: [FileDocumentInput], required: true }),
    fields: t.field({
      type: [FieldInput],
      description: 'Fields whose area pages count across all documents in order.',
    }),
  }),
});

const HtmlDocumentInput = builder.inputType('TemplateHtmlDocumentInput', {
  fields: (t) => ({ html: t.string({ required: true }), name: t.string() }),
});

const CreateFromHtmlInput = builder.inputType('CreateTemplateFromHtmlInput', {
  fields: (t) => ({
    html: t.string({ description: 'HTML with field tags (<text-field>, <signature-field>, ...).' }),
    htmlHeader: t.string({ description: 'Shown on every page.' }),
    htmlFooter: t.string({ description: 'Shown on every page.' }),
    name: t.string({ description: 'Default: a random uuid.' }),
    size: t.string({ description: 'Letter (default), Legal, Tabloid, Ledger, A0–A6.' }),
    externalId: t.string(),
    folderName: t.string(),
    sharedLink: t.boolean(),
    documents: t.field({ type: [HtmlDocumentInput], description: 'Several documents instead of `html`.' }),
  }),
});

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
        'What the template lacks to be used, as it is after the change: TEMPLATE_HAS_NO_FIELDS when it has no fields (a submission from it would be refused). [] when none.',
      resolve: async (payload, _args, ctx) =>
        templateWarnings(
          await ctx.db.template.findUniqueOrThrow({ where: { id: payload.id }, select: { fields: true } }),
        ),
    }),
  }),
});

/** GraphQL's field input in the definition's keys (DocuSeal's), which the services validate. */
const toRequestField = (field: unknown) => fromGraphQLInput(RequestField, field);

function fieldGroups(input: {
  documents: { fields?: unknown[] | null }[];
  fields?: unknown[] | null;
}): RequestFieldGroup[] {
  const groups: RequestFieldGroup[] = input.documents.map((doc, i) => ({
    documentIndex: i,
    fields: (doc.fields ?? []).map(toRequestField),
    path: `documents[${i}].fields`,
  }));
  groups.push({ fields: (input.fields ?? []).map(toRequestField), path: 'fields' });
  return groups;
}

async function save(
  ctx: GraphQLContext,
  documents: PreparedDocument[],
  input: { name?: string | null; externalId?: string | null; folderName?: string | null; sharedLink?: boolean | null },
  requestFields: RequestFieldGroup[],
) {
  const { account, user } = requireViewer(ctx);
  const { templateId } = await saveTemplate(ctx, {
    accountId: account.id,
    userId: user.id,
    name: input.name ?? undefined,
    externalId: input.externalId ?? undefined,
    folderName: input.folderName ?? undefined,
    sharedLink: input.sharedLink ?? undefined,
    source: 'api',
    documents,
    requestFields,
  });
  return { id: templateId };
}

builder.mutationField('createTemplateFromPdf', (t) =>
  t.field({
    type: TemplatePayload,
    description:
      'Creates a template from PDFs (fields from `fields` and/or {{text tags}}), or updates the one with `externalId`.',
    args: { input: t.arg({ type: CreateFromFileInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      requireViewer(ctx);
      checkTemplateRequest(input);
      const documents = await preparePdfDocuments({ config: ctx.config, renderer: ctx.renderer }, input.documents);
      return save(ctx, documents, input, fieldGroups(input));
    },
  }),
);

builder.mutationField('createTemplateFromDocx', (t) =>
  t.field({
    type: TemplatePayload,
    description: 'Creates a template from Word DOCX files (converted to PDF), or updates the one with `externalId`.',
    args: { input: t.arg({ type: CreateFromFileInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      requireViewer(ctx);
      checkTemplateRequest(input);
      const documents = await prepareDocxDocuments({ config: ctx.config, renderer: ctx.renderer }, input.documents);
      return save(ctx, documents, input, fieldGroups(input));
    },
  }),
);

builder.mutationField('createTemplateFromHtml', (t) =>
  t.field({
    type: TemplatePayload,
    description: 'Creates a template from HTML with field tags, or updates the one with `externalId`.',
    args: { input: t.arg({ type: CreateFromHtmlInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      requireViewer(ctx);
      checkTemplateRequest(input);
      const name = input.name?.trim() || crypto.randomUUID();
      const documents = await prepareHtmlDocuments(
        { config: ctx.config, renderer: ctx.renderer },
        {
          html: input.html ?? undefined,
          documents: input.documents ?? undefined,
          header: input.htmlHeader ?? undefined,
          footer: input.htmlFooter ?? undefined,
          size: parsePaperSize(input.size ?? undefined),
          name,
        },
      );
      return save(ctx, documents, { ...input, name }, []);
    },
  }),
);

const UpdateTemplateInputRef = builder.inputType('UpdateTemplateInput', {
  fields: (t) => ({
    id: t.int({ required: true }),
    name: t.string(),
    folderName: t.string(),
    externalId: t.string(),
    sharedLink: t.boolean(),
    roles: t.stringList({ description: 'Renames roles by position; extra names add roles.' }),
    archived: t.boolean({ description: 'true archives, false restores.' }),
  }),
});

builder.mutationField('updateTemplate', (t) =>
  t.field({
    type: TemplatePayload,
    args: { input: t.arg({ type: UpdateTemplateInputRef, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account, user } = requireViewer(ctx);
      const { id, ...changes } = input;
      // template.updated on every call, even without a change; template.archived when this archived it.
      await updateTemplate(ctx, { accountId: account.id, userId: user.id }, id, withoutNulls(changes));
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
      const { account, user } = requireViewer(ctx);
      await archiveTemplate(ctx, { accountId: account.id, userId: user.id }, input.id);
      // On every call, as DocuSeal's DELETE /templates/{id} (reference §6, §8.2).
      return { id: input.id };
    },
  }),
);

const CloneTemplateInputRef = builder.inputType('CloneTemplateInput', {
  fields: (t) => ({
    id: t.int({ required: true }),
    name: t.string({ description: 'Default "<name> (Clone)".' }),
    folderName: t.string(),
    externalId: t.string(),
    documentNames: t.stringList({ description: 'Renames documents by position.' }),
  }),
});

builder.mutationField('cloneTemplate', (t) =>
  t.field({
    type: TemplatePayload,
    args: { input: t.arg({ type: CloneTemplateInputRef, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account, user } = requireViewer(ctx);
      const { id, ...options } = input;
      const cloneId = await cloneTemplate(ctx, { accountId: account.id, userId: user.id }, id, withoutNulls(options));
      return { id: cloneId };
    },
  }),
);

const DocumentChangeInput = builder.inputType('TemplateDocumentChangeInput', {
  description:
    'One change: add (default, at `position` or last), `replace` the document at `position`, or `remove` it (by `position` or `name`).',
  fields: (t) => ({
    name: t.string({ description: 'Default: a random uuid.' }),
    file: t.string({ description: 'Base64 or URL of a PDF or DOCX.' }),
    html: t.string({ description: 'HTML with field tags, instead of `file`.' }),
    position: t.int({ description: '0-based.' }),
    replace: t.boolean(),
    remove: t.boolean(),
  }),
});

const UpdateDocumentsInput = builder.inputType('UpdateTemplateDocumentsInput', {
  fields: (t) => ({
    id: t.int({ required: true }),
    documents: t.field({ type: [DocumentChangeInput], required: true }),
    merge: t.boolean({ description: 'Merge all documents into one PDF afterwards.' }),
  }),
});

builder.mutationField('updateTemplateDocuments', (t) =>
  t.field({
    type: TemplatePayload,
    description:
      "Adds, replaces or removes a template's documents; a replaced document's fields move to the new one when it brings none.",
    args: { input: t.arg({ type: UpdateDocumentsInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account, user } = requireViewer(ctx);
      checkItems(input.documents, MAX_ITEMS.documents, 'documents');
      await findTemplateForAccount(ctx.db, { id: input.id, accountId: account.id });
      const operations: PreparedOperation[] = [];
      for (const [i, raw] of input.documents.entries()) {
        const op = parseInput(DocumentOperation, withoutNulls(raw), { at: `documents[${i}]` });
        operations.push(
          op.remove
            ? op
            : { ...op, prepared: await prepareChangedDocument({ config: ctx.config, renderer: ctx.renderer }, op, i) },
        );
      }
      await updateTemplateDocuments(ctx, { accountId: account.id, userId: user.id }, input.id, operations, {
        merge: input.merge ?? false,
      });
      return { id: input.id };
    },
  }),
);

const MergeInput = builder.inputType('MergeTemplatesInput', {
  fields: (t) => ({
    templateIds: t.intList({ required: true }),
    name: t.string({ description: 'Default "<first template name> (Merged)".' }),
    folderName: t.string(),
    externalId: t.string(),
    sharedLink: t.boolean(),
    roles: t.stringList({ description: 'Renames the merged roles by position.' }),
  }),
});

builder.mutationField('mergeTemplates', (t) =>
  t.field({
    type: TemplatePayload,
    description: 'A new template with the documents, roles (merged by name) and fields of several templates.',
    args: { input: t.arg({ type: MergeInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account, user } = requireViewer(ctx);
      const id = await mergeTemplates(ctx, { accountId: account.id, userId: user.id }, withoutNulls(input));
      return { id };
    },
  }),
);
