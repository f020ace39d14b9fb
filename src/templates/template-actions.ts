/**
 * The small template operations: update (name, folder, roles, archived), archive, delete
 * (permanently), clone (reference/docuseal-behaviour.md §8.2). Each writes its template event row, and records its
 * template.* domain events (webhooks, subscriptions: reference §6), in the same transaction.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { parseInput } from '../accounts/api-keys.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { DELETE_TRANSACTION, deleteRecordsPermanently } from './delete-records.ts';
import { parseFields, parseRoles, parseSchema, remapConditions } from './fields.ts';
import { findTemplateForAccount } from './find-template.ts';
import { findOrCreateFolder } from './folders.ts';
import { generateSlug } from './save-template.ts';
import { templateEvents, type TemplateChangeDeps } from './template-events.ts';
import { CloneOptions, TemplateChanges } from './template-requests.ts';

interface Actor {
  accountId: number;
  userId: number;
}

/**
 * Updates a template. `archived: true` archives, `false` restores. Raises template.updated, and
 * template.archived when this call archived it (reference §6: PUT archived:true when it changes).
 * @returns id, the new updated_at, and `archived`: whether this call archived it (it was not archived before)
 * @throws AppError NOT_FOUND / FORBIDDEN / VALIDATION
 */
export async function updateTemplate(
  deps: TemplateChangeDeps,
  actor: Actor,
  id: number,
  input: z.input<typeof TemplateChanges>,
): Promise<{ id: number; updatedAt: Date; archived: boolean }> {
  const changes = parseInput(TemplateChanges, input);
  return deps.effects.transaction(async (tx, effects) => {
    await findTemplateForAccount(tx, { id, accountId: actor.accountId });
    const template = await tx.template.findUniqueOrThrow({
      where: { id },
      select: { submitters: true, archivedAt: true },
    });
    const data: Prisma.TemplateUpdateInput = {};
    if (changes.name !== undefined) data.name = changes.name;
    if (changes.external_id !== undefined) data.externalId = changes.external_id;
    if (changes.shared_link !== undefined) data.sharedLink = changes.shared_link;
    if (changes.folder_name !== undefined) {
      const folder = await findOrCreateFolder(tx, {
        accountId: actor.accountId,
        authorId: actor.userId,
        fullName: changes.folder_name,
      });
      data.folder = { connect: { id: folder.id } };
    }
    if (changes.roles !== undefined) {
      const roles = parseRoles(template.submitters);
      const renamed = changes.roles.map((name, i) => ({ name, uuid: roles[i]?.uuid ?? randomUUID() }));
      // Roles beyond the list keep their names (DocuSeal renames by index only).
      data.submitters = [...renamed, ...roles.slice(renamed.length)] as unknown as Prisma.InputJsonValue;
    }
    let eventType = 'template.updated';
    if (changes.archived === true && !template.archivedAt) {
      data.archivedAt = new Date();
      eventType = 'template.archived';
    } else if (changes.archived === false) {
      data.archivedAt = null;
    }
    // Always touch updated_at: the response carries it and template.updated fires on every call.
    data.updatedAt = new Date();
    const updated = await tx.template.update({ where: { id }, data, select: { id: true, updatedAt: true } });
    await tx.templateEvent.create({
      data: { accountId: actor.accountId, templateId: id, userId: actor.userId, eventType },
    });
    const archived = eventType === 'template.archived';
    effects.events.push(
      ...templateEvents(
        actor.accountId,
        id,
        archived ? ['template.updated', 'template.archived'] : ['template.updated'],
      ),
    );
    return { ...updated, archived };
  });
}

/**
 * Archives a template (DELETE /templates/{id}); archiving twice keeps the first time.
 * template.archived is raised on every call.
 * @throws AppError NOT_FOUND / FORBIDDEN
 */
export async function archiveTemplate(
  deps: TemplateChangeDeps,
  actor: Actor,
  id: number,
): Promise<{ id: number; archivedAt: Date }> {
  return deps.effects.transaction(async (tx, effects) => {
    const template = await findTemplateForAccount(tx, { id, accountId: actor.accountId });
    effects.events.push(...templateEvents(actor.accountId, id, ['template.archived']));
    if (template.archivedAt) return { id, archivedAt: template.archivedAt };
    const archived = await tx.template.update({
      where: { id },
      data: { archivedAt: new Date() },
      select: { id: true, archivedAt: true },
    });
    await tx.templateEvent.create({
      data: { accountId: actor.accountId, templateId: id, userId: actor.userId, eventType: 'template.archived' },
    });
    return { id: archived.id, archivedAt: archived.archivedAt! };
  });
}

/**
 * Deletes a template permanently (DELETE /templates/{id}?permanently=true, §8.2; DocuSeal's
 * `@template.destroy!`, app/models/template.rb `has_many :submissions, dependent: :destroy`): with
 * its documents, events and all its submissions (as deleteSubmission deletes each), the webhook
 * deliveries of their events, and the stored files only they used — a file a clone or another
 * submission still uses stays (src/templates/delete-records.ts). Its folder stays. No event
 * is raised.
 * @returns its id and `archivedAt` as it had them (null when it was not archived), DocuSeal's answer
 * @throws AppError NOT_FOUND / FORBIDDEN
 */
export async function deleteTemplate(
  deps: TemplateChangeDeps,
  actor: Actor,
  id: number,
): Promise<{ id: number; archivedAt: Date | null }> {
  return deps.effects.transaction(async (tx, effects) => {
    const template = await findTemplateForAccount(tx, { id, accountId: actor.accountId });
    await deleteRecordsPermanently(tx, effects, { accountId: actor.accountId, templateId: id, submissionIds: [] });
    return { id, archivedAt: template.archivedAt };
  }, DELETE_TRANSACTION);
}

/**
 * Clones a template: new role, field and document uuids (areas and conditions remapped), the same stored files,
 * name "<name> (Clone)" unless given, the source's folder unless given, source "api".
 * @returns the new template's id
 * @throws AppError NOT_FOUND / FORBIDDEN / VALIDATION
 */
export async function cloneTemplate(
  deps: TemplateChangeDeps,
  actor: Actor,
  id: number,
  input: z.input<typeof CloneOptions>,
): Promise<number> {
  const options = parseInput(CloneOptions, input);
  return deps.effects.transaction(async (tx, effects) => {
    await findTemplateForAccount(tx, { id, accountId: actor.accountId });
    const source = await tx.template.findUniqueOrThrow({
      where: { id },
      include: { documents: { orderBy: { position: 'asc' } } },
    });
    const roleMap = new Map(parseRoles(source.submitters).map((r) => [r.uuid, randomUUID()]));
    const docMap = new Map(source.documents.map((d) => [d.uuid, randomUUID()]));
    const roles = parseRoles(source.submitters).map((r) => ({ ...r, uuid: roleMap.get(r.uuid)! }));
    // Old → new uuids of fields and options, for the conditions that name them.
    const renewed = new Map<string, string>();
    const renewedFields = parseFields(source.fields).map((f) => {
      const optionMap = new Map((f.options ?? []).map((o) => [o.uuid, randomUUID()]));
      const uuid = randomUUID();
      renewed.set(f.uuid, uuid);
      for (const [from, to] of optionMap) renewed.set(from, to);
      return {
        ...f,
        uuid,
        submitter_uuid: roleMap.get(f.submitter_uuid) ?? f.submitter_uuid,
        ...(f.options ? { options: f.options.map((o) => ({ ...o, uuid: optionMap.get(o.uuid)! })) } : {}),
        areas: f.areas.map((a) => ({
          ...a,
          attachment_uuid: docMap.get(a.attachment_uuid) ?? a.attachment_uuid,
          ...(a.option_uuid ? { option_uuid: optionMap.get(a.option_uuid) ?? a.option_uuid } : {}),
        })),
      };
    });
    const fields = remapConditions(renewedFields, renewed);
    const names = source.documents.map((d, i) => options.document_names?.[i] || d.name);
    const schema = parseSchema(source.schema).map((entry) => {
      const index = source.documents.findIndex((d) => d.uuid === entry.attachment_uuid);
      return {
        attachment_uuid: docMap.get(entry.attachment_uuid) ?? entry.attachment_uuid,
        name: index >= 0 ? names[index]! : entry.name,
      };
    });
    const folderId =
      options.folder_name !== undefined
        ? (
            await findOrCreateFolder(tx, {
              accountId: actor.accountId,
              authorId: actor.userId,
              fullName: options.folder_name,
            })
          ).id
        : source.folderId;
    const clone = await tx.template.create({
      data: {
        accountId: actor.accountId,
        authorId: actor.userId,
        folderId,
        slug: generateSlug(),
        name: options.name ?? `${source.name} (Clone)`,
        externalId: options.external_id ?? null,
        source: 'api',
        submitters: roles as unknown as Prisma.InputJsonValue,
        fields: fields as unknown as Prisma.InputJsonValue,
        schema: schema as unknown as Prisma.InputJsonValue,
        preferences: source.preferences as Prisma.InputJsonValue,
        sharedLink: source.sharedLink,
      },
      select: { id: true },
    });
    await tx.templateDocument.createMany({
      data: source.documents.map((d, position) => ({
        uuid: docMap.get(d.uuid)!,
        templateId: clone.id,
        fileId: d.fileId,
        name: names[position]!,
        position,
      })),
    });
    await tx.templateEvent.create({
      data: { accountId: actor.accountId, templateId: clone.id, userId: actor.userId, eventType: 'template.created' },
    });
    effects.events.push(...templateEvents(actor.accountId, clone.id, ['template.created']));
    return clone.id;
  });
}
