/**
 * Templates as DocuSeal shows them, read straight from the database: the read model
 * src/docuseal-shapes/template.ts turns into DocuSeal's template JSON (TemplateData: GET
 * /templates/{id} and the template.* webhooks; reference/docuseal-behaviour.md §5.5, §5.6).
 *
 * No GraphQL and no viewer: the webhooks (src/webhooks/payloads.ts) and the REST routes load
 * through these functions, scoped by the account given. A page of ids costs a fixed number of
 * queries (the templates with their author and documents, the documents' preview images, one per
 * level of folder nesting), never one per template.
 *
 * The rule read models share with the GraphQL Template type lives here once and both call it:
 * templateFolderName (a template's full folder name, "Default" without a folder). Timestamps are
 * written as the GraphQL DateTime scalar writes them (src/graphql/builder.ts): toISOString().
 */
import type { KeyFolders } from '../accounts/key-scopes.ts';
import type { Db } from '../db/client.ts';
import type { TemplateData, TemplateFieldData } from '../docuseal-shapes/template.ts';
import { AppError } from '../errors.ts';
import { findTemplateForAccount } from './find-template.ts';
import { DEFAULT_FOLDER_NAME, folderFullNames } from './folders.ts';
import { type Field, parseFields, parseRoles, parseSchema } from './fields.ts';

/** What the loaders need besides the database. */
export interface TemplateReadModelDeps {
  db: Db;
  /** Signed, expiring URL of a stored file (src/documents/file-urls.ts, FileUrlSigner.url). */
  files: { url(file: { uuid: string; filename: string }): string };
}

/**
 * A template's `folder_name` (reference §5.5): the full name of its folder, parents joined with
 * " / " (src/templates/folders.ts), or "Default" when it has none.
 * @param fullName the full name of a folder by id: from a map here, a DataLoader in GraphQL
 */
export function templateFolderName<T extends string | Promise<string>>(
  folderId: number | null,
  fullName: (folderId: number) => T,
): T | typeof DEFAULT_FOLDER_NAME {
  return folderId ? fullName(folderId) : DEFAULT_FOLDER_NAME;
}

/**
 * Full names of the folders `folderIds` (nulls skipped), one query per level of nesting.
 * @returns full name by folder id ("Clients / 2026")
 */
export async function loadFolderNames(db: Db, folderIds: readonly (number | null)[]): Promise<Map<number, string>> {
  const ids = [...new Set(folderIds.filter((id): id is number => id !== null))];
  return ids.length === 0 ? new Map() : folderFullNames(db, ids);
}

const iso = (date: Date) => date.toISOString();

/**
 * A stored field (templates.fields, submissions.template_fields: DocuSeal's JSON, src/templates/fields.ts)
 * as the read model TemplateFieldData has it, for serializeTemplateField.
 */
export function templateFieldData(f: Field): TemplateFieldData {
  return {
    uuid: f.uuid,
    submitterUuid: f.submitter_uuid,
    name: f.name,
    type: f.type,
    required: f.required,
    readonly: f.readonly ?? false,
    defaultValue: f.default_value ?? null,
    title: f.title ?? null,
    description: f.description ?? null,
    preferences: f.preferences ?? {},
    validation: f.validation ?? null,
    options: f.options?.map((o) => ({ value: o.value, uuid: o.uuid })) ?? null,
    conditions: f.conditions?.length
      ? f.conditions.map((c) => ({
          fieldUuid: c.field_uuid,
          value: c.value === undefined || c.value === null ? null : String(c.value),
          action: c.action,
          operation: c.operation ?? null,
        }))
      : null,
    areas: f.areas.map((a) => ({
      x: a.x,
      y: a.y,
      w: a.w,
      h: a.h,
      page: a.page,
      attachmentUuid: a.attachment_uuid,
      optionUuid: a.option_uuid ?? null,
      cellW: a.cell_w ?? null,
    })),
  };
}

/**
 * Template read models (TemplateData) of the templates `request.ids`, archived ones too.
 * @param request.accountId the account whose templates these are
 * @param request.ids template ids, any order, may repeat
 * @returns one per id, in the same order; null for an unknown id or another account's template
 */
export async function loadTemplateReadModels(
  deps: TemplateReadModelDeps,
  request: { accountId: number; ids: readonly number[] },
): Promise<(TemplateData | null)[]> {
  if (request.ids.length === 0) return [];
  const rows = await deps.db.template.findMany({
    where: { id: { in: [...new Set(request.ids)] }, accountId: request.accountId },
    select: {
      id: true,
      slug: true,
      name: true,
      source: true,
      externalId: true,
      sharedLink: true,
      preferences: true,
      accountId: true,
      authorId: true,
      folderId: true,
      createdAt: true,
      updatedAt: true,
      archivedAt: true,
      submitters: true,
      fields: true,
      schema: true,
      author: { select: { id: true, email: true, firstName: true, lastName: true } },
      documents: {
        orderBy: [{ position: 'asc' }, { id: 'asc' }],
        select: { id: true, uuid: true, fileId: true, file: { select: { uuid: true, filename: true } } },
      },
    },
  });
  const fileIds = [...new Set(rows.flatMap((t) => t.documents.map((d) => d.fileId)))];
  const [folderNames, previews] = await Promise.all([
    loadFolderNames(
      deps.db,
      rows.map((t) => t.folderId),
    ),
    fileIds.length === 0
      ? []
      : deps.db.documentPreview.findMany({
          where: { fileId: { in: fileIds }, page: 0 },
          select: { fileId: true, imageFile: { select: { uuid: true, filename: true } } },
        }),
  ]);
  const previewOf = new Map(previews.map((p) => [p.fileId, p.imageFile]));
  const byId = new Map<number, TemplateData>();
  for (const t of rows) {
    byId.set(t.id, {
      id: t.id,
      slug: t.slug,
      name: t.name,
      source: t.source,
      externalId: t.externalId,
      sharedLink: t.sharedLink,
      preferences: t.preferences,
      accountId: t.accountId,
      authorId: t.authorId,
      folderId: t.folderId,
      folderName: templateFolderName(t.folderId, (id) => folderNames.get(id) ?? ''),
      createdAt: iso(t.createdAt),
      updatedAt: iso(t.updatedAt),
      archivedAt: t.archivedAt === null ? null : iso(t.archivedAt),
      author: t.author,
      roles: parseRoles(t.submitters).map((r) => ({ uuid: r.uuid, name: r.name })),
      schema: parseSchema(t.schema).map((d) => ({ attachmentUuid: d.attachment_uuid, name: d.name })),
      fields: parseFields(t.fields).map(templateFieldData),
      documents: t.documents.map((d) => {
        const preview = previewOf.get(d.fileId);
        return {
          id: d.id,
          uuid: d.uuid,
          url: deps.files.url(d.file),
          previewImageUrl: preview ? deps.files.url(preview) : null,
          filename: d.file.filename,
        };
      }),
    });
  }
  return request.ids.map((id) => byId.get(id) ?? null);
}

/**
 * One template of the account (archived ones too) as GET /templates/{id} shows it
 * (loadTemplateReadModels).
 * @throws AppError NOT_FOUND ("Template <id> not found") or FORBIDDEN for another account's
 *   (findTemplateForAccount, the one tenant check; asked only when the load found nothing, or
 *   first for a key limited to folders, `options.folders`: FORBIDDEN outside them)
 */
export async function readTemplateForAccount(
  deps: TemplateReadModelDeps,
  options: { id: number; accountId: number; folders?: KeyFolders | null | undefined },
): Promise<TemplateData> {
  if (options.folders) await findTemplateForAccount(deps.db, options);
  const [template] = await loadTemplateReadModels(deps, { accountId: options.accountId, ids: [options.id] });
  if (template) return template;
  await findTemplateForAccount(deps.db, options);
  throw new AppError('NOT_FOUND', `Template ${options.id} not found`);
}

/**
 * `{id, archivedAt}` of templates (the template.archived webhook's data, reference §5.6).
 * @returns one per id, in the same order; null for an unknown id or another account's template
 */
export async function loadTemplateArchivedAt(
  deps: Pick<TemplateReadModelDeps, 'db'>,
  request: { accountId: number; ids: readonly number[] },
): Promise<({ id: number; archivedAt: string | null } | null)[]> {
  if (request.ids.length === 0) return [];
  const rows = await deps.db.template.findMany({
    where: { id: { in: [...new Set(request.ids)] }, accountId: request.accountId },
    select: { id: true, archivedAt: true },
  });
  const byId = new Map(
    rows.map((t) => [t.id, { id: t.id, archivedAt: t.archivedAt === null ? null : iso(t.archivedAt) }]),
  );
  return request.ids.map((id) => byId.get(id) ?? null);
}
