/**
 * `POST /templates/merge` (OpenAPI): a new template with the documents, roles and fields of
 * several templates, in the order given. Roles with the same name (case-insensitive) become one;
 * `roles` then renames the merged roles by position. Stored files are shared, uuids are new (conditions follow).
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { parseInput } from '../accounts/api-keys.ts';
import { checkItems, MAX_ITEMS } from '../limits.ts';
import { checkTemplateFieldsSize } from './build-fields.ts';
import { templateEvents, type TemplateChangeDeps } from './template-events.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { parseFields, parseRoles, remapConditions, type Field, type Role } from './fields.ts';
import type { KeyFolders } from '../accounts/key-scopes.ts';
import { findTemplateForAccount } from './find-template.ts';
import { findOrCreateFolder } from './folders.ts';
import { generateSlug } from './save-template.ts';
import { MergeTemplatesRequest } from './template-requests.ts';

/**
 * @returns the new template's id
 * @throws AppError VALIDATION (fewer than 2 ids, sizes over src/limits.ts), NOT_FOUND / FORBIDDEN for any id
 */
export async function mergeTemplates(
  deps: TemplateChangeDeps,
  actor: { accountId: number; userId: number; folders?: KeyFolders | null | undefined },
  input: z.input<typeof MergeTemplatesRequest>,
): Promise<number> {
  // Sizes: src/limits.ts; the merged template's fields and documents too (at most what one template may hold).
  const options = parseInput(MergeTemplatesRequest, input);
  return deps.effects.transaction(async (tx, effects) => {
    for (const id of options.template_ids)
      await findTemplateForAccount(tx, { id, accountId: actor.accountId, folders: actor.folders });
    const sources = await tx.template.findMany({
      where: { id: { in: options.template_ids } },
      include: { documents: { orderBy: { position: 'asc' } } },
    });
    const ordered = options.template_ids.map((id) => sources.find((s) => s.id === id)!);
    const merged: MergedContent = { roles: [], fields: [], documents: [] };
    for (const source of ordered) appendTemplateContent(merged, source);
    const { roles, fields, documents } = merged;
    options.roles?.forEach((name, i) => {
      if (roles[i]) roles[i] = { ...roles[i]!, name };
      else roles.push({ name, uuid: randomUUID() });
    });
    checkTemplateFieldsSize(fields, roles);
    checkItems(documents, MAX_ITEMS.documents, 'documents');
    const folderId =
      options.folder_name !== undefined
        ? (
            await findOrCreateFolder(tx, {
              accountId: actor.accountId,
              authorId: actor.userId,
              fullName: options.folder_name,
              folders: actor.folders,
            })
          ).id
        : ordered[0]!.folderId;
    const template = await tx.template.create({
      data: {
        accountId: actor.accountId,
        authorId: actor.userId,
        folderId,
        slug: generateSlug(),
        name: options.name ?? `${ordered[0]!.name} (Merged)`,
        externalId: options.external_id ?? null,
        source: 'api',
        sharedLink: options.shared_link ?? false,
        submitters: roles as unknown as Prisma.InputJsonValue,
        fields: fields as unknown as Prisma.InputJsonValue,
        schema: documents.map((d) => ({ attachment_uuid: d.uuid, name: d.name })) as unknown as Prisma.InputJsonValue,
      },
      select: { id: true },
    });
    await tx.templateDocument.createMany({
      data: documents.map((d, position) => ({
        uuid: d.uuid,
        templateId: template.id,
        fileId: d.fileId,
        name: d.name,
        position,
      })),
    });
    await tx.templateEvent.create({
      data: {
        accountId: actor.accountId,
        templateId: template.id,
        userId: actor.userId,
        eventType: 'template.created',
      },
    });
    effects.events.push(...templateEvents(actor.accountId, template.id, ['template.created']));
    return template.id;
  });
}

/** Roles, fields and documents being merged: documents as stored files (shared, not copied). */
export interface MergedContent {
  roles: Role[];
  fields: Field[];
  documents: { uuid: string; fileId: number; name: string }[];
}

/**
 * Appends a template's content to `into` (POST /templates/merge; the `template_ids` of a one-off
 * submission, src/submissions/create-one-off-submission.ts): its roles merged by name
 * (case-insensitive) with those there, its documents under new uuids (the stored files shared),
 * its fields with new uuids pointing at those roles and documents (their conditions remapped).
 * @param source the template's stored columns and documents in order
 */
export function appendTemplateContent(
  into: MergedContent,
  source: { submitters: unknown; fields: unknown; documents: { uuid: string; fileId: number; name: string }[] },
): void {
  const roleMap = new Map<string, string>();
  for (const role of parseRoles(source.submitters)) {
    let merged = into.roles.find((r) => r.name.toLowerCase() === role.name.toLowerCase());
    if (!merged) {
      merged = { name: role.name, uuid: randomUUID() };
      into.roles.push(merged);
    }
    roleMap.set(role.uuid, merged.uuid);
  }
  const docMap = new Map(source.documents.map((d) => [d.uuid, randomUUID()]));
  for (const d of source.documents) into.documents.push({ uuid: docMap.get(d.uuid)!, fileId: d.fileId, name: d.name });
  // Old → new uuids of this template's fields and options, for the conditions that name them.
  const renewed = new Map<string, string>();
  const sourceFields: Field[] = [];
  for (const field of parseFields(source.fields)) {
    const optionMap = new Map((field.options ?? []).map((o) => [o.uuid, randomUUID()]));
    const uuid = randomUUID();
    renewed.set(field.uuid, uuid);
    for (const [from, to] of optionMap) renewed.set(from, to);
    sourceFields.push({
      ...field,
      uuid,
      submitter_uuid: roleMap.get(field.submitter_uuid) ?? field.submitter_uuid,
      ...(field.options ? { options: field.options.map((o) => ({ ...o, uuid: optionMap.get(o.uuid)! })) } : {}),
      areas: field.areas.map((a) => ({
        ...a,
        attachment_uuid: docMap.get(a.attachment_uuid) ?? a.attachment_uuid,
        ...(a.option_uuid ? { option_uuid: optionMap.get(a.option_uuid) ?? a.option_uuid } : {}),
      })),
    });
  }
  into.fields.push(...remapConditions(sourceFields, renewed));
}
