/**
 * Templates over GraphQL: the Template type (roles, fields, areas, documents with signed URLs)
 * and the `templates` / `template` queries. Mutations are in template-mutations.ts.
 */
import { z } from 'zod';
import { parseInput } from '../../accounts/api-keys.ts';
import { MAX_LENGTH, text } from '../../limits.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import {
  parseFields,
  parseRoles,
  parseSchema,
  type Area,
  type Field,
  type Role,
  type SchemaDocument,
} from '../../templates/fields.ts';
import { CONDITION_ACTIONS, type FieldCondition } from '../../templates/field-conditions.ts';
import { templatesInFolders } from '../../accounts/key-scopes.ts';
import { findTemplateForAccount } from '../../templates/find-template.ts';
import { templateFolderName } from '../../templates/read-models.ts';
import { ONE_OFF_TEMPLATE_SOURCE } from '../../templates/save-template.ts';
import { idCursorWhere, PageArgs, pageSize, paginationOf, type Pagination } from '../../util/pagination.ts';
import { builder } from '../builder.ts';
import { requireViewer } from '../context.ts';

export const PaginationRef = builder.objectRef<Pagination>('Pagination').implement({
  description: 'Cursor pagination: items ascend by id; pass `next` as `after` for the following page.',
  fields: (t) => ({
    count: t.exposeInt('count', { description: 'Items on this page (not a total).' }),
    next: t.exposeInt('next', {
      nullable: true,
      description: 'Id of the last item on this page; null when the page is empty.',
    }),
    prev: t.exposeInt('prev', { nullable: true, description: 'Id of the first item on this page.' }),
  }),
});

const RoleRef = builder.objectRef<Role>('TemplateRole').implement({
  description: 'A signer role of a template (DocuSeal `submitters`).',
  fields: (t) => ({
    uuid: t.exposeString('uuid'),
    name: t.exposeString('name'),
  }),
});

export const AreaRef = builder.objectRef<Area>('FieldArea').implement({
  description: 'Where a field sits: fractions (0..1) of the displayed page, y from the top; page 0-based.',
  fields: (t) => ({
    x: t.exposeFloat('x'),
    y: t.exposeFloat('y'),
    w: t.exposeFloat('w'),
    h: t.exposeFloat('h'),
    page: t.exposeInt('page'),
    attachmentUuid: t.exposeString('attachment_uuid', { description: 'The document (TemplateDocument.uuid).' }),
    optionUuid: t.exposeString('option_uuid', { nullable: true }),
    cellW: t.exposeFloat('cell_w', { nullable: true }),
  }),
});

export const FieldOptionRef = builder.objectRef<{ value: string; uuid: string }>('FieldOption').implement({
  fields: (t) => ({ value: t.exposeString('value'), uuid: t.exposeString('uuid') }),
});

export const FieldConditionRef = builder.objectRef<FieldCondition>('FieldCondition').implement({
  description:
    'Show (and require) the field only while this holds (DocuSeal field conditions; docs/signing-form.md ' +
    '"Conditions").',
  fields: (t) => ({
    fieldUuid: t.exposeString('field_uuid', { description: 'The field whose value is looked at.' }),
    value: t.string({
      nullable: true,
      description: 'What is compared with; an option uuid when that field has options.',
      resolve: (c) => (c.value === undefined || c.value === null ? null : String(c.value)),
    }),
    action: t.exposeString('action', { description: `${CONDITION_ACTIONS.join(', ')}.` }),
    operation: t.string({
      nullable: true,
      description: 'or: ORed with the result of the conditions before it; otherwise ANDed.',
      resolve: (c) => c.operation ?? null,
    }),
  }),
});

export const FieldRef = builder.objectRef<Field>('TemplateField').implement({
  description: 'A field of a template, filled by the role `submitterUuid` names.',
  fields: (t) => ({
    uuid: t.exposeString('uuid'),
    submitterUuid: t.exposeString('submitter_uuid'),
    name: t.exposeString('name'),
    type: t.exposeString('type'),
    required: t.exposeBoolean('required'),
    readonly: t.boolean({ resolve: (field) => field.readonly ?? false }),
    defaultValue: t.field({ type: 'JSON', nullable: true, resolve: (field) => field.default_value ?? null }),
    title: t.exposeString('title', { nullable: true }),
    description: t.exposeString('description', { nullable: true }),
    preferences: t.field({ type: 'JSON', resolve: (field) => field.preferences ?? {} }),
    options: t.field({ type: [FieldOptionRef], nullable: true, resolve: (field) => field.options ?? null }),
    validation: t.field({ type: 'JSON', nullable: true, resolve: (field) => field.validation ?? null }),
    conditions: t.field({
      type: [FieldConditionRef],
      nullable: true,
      description: 'Null when the field is always shown.',
      resolve: (field) => (field.conditions?.length ? field.conditions : null),
    }),
    areas: t.field({ type: [AreaRef], resolve: (field) => field.areas }),
  }),
});

const SchemaDocumentRef = builder.objectRef<SchemaDocument>('TemplateSchemaDocument').implement({
  description: 'An entry of the document order (DocuSeal `schema`).',
  fields: (t) => ({
    attachmentUuid: t.exposeString('attachment_uuid'),
    name: t.exposeString('name'),
  }),
});

export const TemplateDocumentRef = builder.prismaObject('TemplateDocument', {
  description: 'A document of a template (a stored PDF).',
  fields: (t) => ({
    id: t.exposeInt('id'),
    uuid: t.exposeString('uuid', { description: 'The attachment uuid areas refer to.' }),
    name: t.exposeString('name'),
    position: t.exposeInt('position'),
    filename: t.string({ select: { file: { select: { filename: true } } }, resolve: (doc) => doc.file.filename }),
    url: t.string({
      description: 'Signed, expiring URL of the PDF.',
      select: { file: { select: { uuid: true, filename: true } } },
      resolve: (doc, _args, ctx) => ctx.files.url(doc.file),
    }),
    pageCount: t.int({
      nullable: true,
      select: { file: { select: { pageCount: true } } },
      resolve: (doc) => doc.file.pageCount,
    }),
    previewImageUrl: t.string({
      nullable: true,
      description: 'Signed URL of the first page rendered as PNG, 1400 px wide.',
      select: { fileId: true },
      resolve: async (doc, _args, ctx) => {
        const image = await ctx.loaders.previewImage.load(doc.fileId);
        return image ? ctx.files.url(image) : null;
      },
    }),
  }),
});

export const TemplateRef = builder.prismaObject('Template', {
  description: 'A reusable signing form: documents, signer roles and fields.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    slug: t.exposeString('slug'),
    name: t.exposeString('name'),
    source: t.exposeString('source'),
    externalId: t.exposeString('externalId', { nullable: true }),
    sharedLink: t.exposeBoolean('sharedLink'),
    preferences: t.field({ type: 'JSON', resolve: (template) => template.preferences }),
    accountId: t.exposeInt('accountId'),
    authorId: t.exposeInt('authorId', { nullable: true }),
    author: t.relation('author', { nullable: true }),
    folderId: t.exposeInt('folderId', { nullable: true }),
    folderName: t.string({
      description: 'Full folder name, parents joined with " / ".',
      resolve: (template, _args, ctx) => templateFolderName(template.folderId, (id) => ctx.loaders.folderName.load(id)),
    }),
    roles: t.field({
      type: [RoleRef],
      description: 'Signer roles, in signing order.',
      resolve: (template) => parseRoles(template.submitters),
    }),
    fields: t.field({ type: [FieldRef], resolve: (template) => parseFields(template.fields) }),
    schema: t.field({
      type: [SchemaDocumentRef],
      description: 'Document order.',
      resolve: (template) => parseSchema(template.schema),
    }),
    documents: t.relation('documents', { query: { orderBy: { position: 'asc' } } }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    archivedAt: t.expose('archivedAt', { type: 'DateTime', nullable: true }),
  }),
});

export const TemplateListRef = builder
  .objectRef<{ nodes: Prisma.TemplateGetPayload<object>[]; pagination: Pagination }>('TemplateList')
  .implement({
    fields: (t) => ({
      nodes: t.field({ type: [TemplateRef], resolve: (list) => list.nodes }),
      pagination: t.field({ type: PaginationRef, resolve: (list) => list.pagination }),
    }),
  });

/** Filters are at most MAX_LENGTH.filter characters, a folder name MAX_LENGTH.folderName (src/limits.ts). */
const TemplatesArgs = PageArgs.extend({
  q: text(MAX_LENGTH.filter).optional(),
  externalId: text(MAX_LENGTH.filter).optional(),
  folder: text(MAX_LENGTH.folderName).optional(),
  archived: z.boolean().optional(),
  slug: text(MAX_LENGTH.filter).optional(),
  shared: z.boolean().optional(),
});

builder.queryField('templates', (t) =>
  t.field({
    type: TemplateListRef,
    description:
      "The account's templates, ascending by id (not those of one-off submissions). " +
      'Active ones unless `archived: true` (then archived ones only). ' +
      '`q` matches the name (case-insensitive substring); `folder` is a full folder name.',
    args: {
      q: t.arg.string(),
      externalId: t.arg.string(),
      folder: t.arg.string(),
      archived: t.arg.boolean(),
      slug: t.arg.string(),
      shared: t.arg.boolean({
        description:
          "true: templates other accounts share with this one (DocuSeal's `shared=true`, Templates.shared). Signet " +
          'has no template sharing, so always an empty page, as DocuSeal answers an account without a linked one.',
      }),
      limit: t.arg.int({ description: 'Default 10, at most 100.' }),
      after: t.arg.int({ description: 'Only ids greater than this.' }),
      before: t.arg.int({ description: 'Only ids less than this.' }),
    },
    resolve: async (_root, rawArgs, ctx) => {
      const { account, folders } = requireViewer(ctx);
      const args = parseInput(TemplatesArgs, withoutNulls(rawArgs));
      if (args.shared) return { nodes: [], pagination: paginationOf([]) };
      const where: Prisma.TemplateWhereInput = {
        accountId: account.id,
        // A key limited to folders lists the templates in them only (src/accounts/key-scopes.ts).
        AND: [templatesInFolders(folders)],
        archivedAt: args.archived ? { not: null } : null,
        // A one-off submission's template is its own, not one of the account's to use again.
        source: { not: ONE_OFF_TEMPLATE_SOURCE },
        ...(args.q ? { name: { contains: args.q, mode: 'insensitive' } } : {}),
        ...(args.externalId !== undefined ? { externalId: args.externalId } : {}),
        ...(args.slug !== undefined ? { slug: args.slug } : {}),
        ...(idCursorWhere(args) ? { id: idCursorWhere(args) } : {}),
      };
      if (args.folder !== undefined) {
        const folderIds = await foldersNamed(ctx, account.id, args.folder);
        where.folderId = { in: folderIds };
      }
      // Pothos resolves nested selections (author, documents) from this one findMany.
      const nodes = await ctx.db.template.findMany({ where, orderBy: { id: 'asc' }, take: pageSize(args) });
      return { nodes, pagination: paginationOf(nodes) };
    },
  }),
);

builder.queryField('template', (t) =>
  t.prismaField({
    type: TemplateRef,
    description:
      "One of the account's templates (archived ones too). NOT_FOUND for an unknown id, FORBIDDEN for another " +
      "account's.",
    args: { id: t.arg.int({ required: true }) },
    resolve: async (query, _root, { id }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      await findTemplateForAccount(ctx.db, { id, accountId: account.id, folders });
      return ctx.db.template.findUniqueOrThrow({ ...query, where: { id } });
    },
  }),
);

/** Ids of the account's folders whose full name is `fullName` (there may be none). */
async function foldersNamed(
  ctx: { db: import('../../db/client.ts').Db; loaders: import('../loaders.ts').Loaders },
  accountId: number,
  fullName: string,
): Promise<number[]> {
  const leaf = fullName.split(' / ').at(-1)?.trim() ?? '';
  const candidates = await ctx.db.folder.findMany({ where: { accountId, name: leaf }, select: { id: true } });
  const names = await ctx.loaders.folderName.loadMany(candidates.map((c) => c.id));
  return candidates.filter((_c, i) => names[i] === fullName.trim()).map((c) => c.id);
}

/** GraphQL gives null for absent optional args; zod schemas here treat absent as undefined. */
function withoutNulls<T extends Record<string, unknown>>(args: T): { [K in keyof T]: Exclude<T[K], null> } {
  return Object.fromEntries(Object.entries(args).filter(([, v]) => v !== null && v !== undefined)) as never;
}

export { withoutNulls };
