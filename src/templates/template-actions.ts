/**
 * The small template operations: update (name, folder, roles, archived, fields and submitters),
 * archive, delete (permanently), clone (reference/docuseal-behaviour.md §8.2). Each writes its
 * template event row, and records its template.* domain events (webhooks, subscriptions:
 * reference §6), in the same transaction.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { parseInput } from '../accounts/api-keys.ts';
import type { PdfPage } from '../documents/pdf.ts';
import { AppError } from '../errors.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { buildFields, checkTemplateFieldsSize } from './build-fields.ts';
import { DELETE_TRANSACTION, deleteRecordsPermanently } from './delete-records.ts';
import { parseFields, parseRoles, parseSchema, remapConditions, type Field, type Role } from './fields.ts';
import type { KeyFolders } from '../accounts/key-scopes.ts';
import { findTemplateForAccount } from './find-template.ts';
import { findOrCreateFolder } from './folders.ts';
import { generateSlug } from './save-template.ts';
import { templateEvents, type TemplateChangeDeps } from './template-events.ts';
import { CloneOptions, TemplateChanges } from './template-requests.ts';

interface Actor {
  accountId: number;
  userId: number;
  /** The folders the caller's key is limited to (src/accounts/key-scopes.ts); null or absent: every folder. */
  folders?: KeyFolders | null | undefined;
}

/**
 * Updates a template (DocuSeal's templates_controller#update). `archived: true` archives, `false`
 * restores. `roles` renames roles by position (more names add roles). `submitters` and `fields`
 * replace the template's lists, as DocuSeal's `@template.update!(template_params)`:
 * - `submitters` [{name, uuid?}]: the roles, in order; a given uuid keeps that role (its fields stay
 *   with it), a new uuid is made otherwise. Fields of roles no longer listed go with them (as
 *   DocuSeal's builder removes a role's fields with it, and other fields' conditions naming them)
 *   unless `fields` is given too;
 * - `fields`: every field, validated as on create (buildFields, one definition: RequestField) against
 *   the template's documents and roles (after `submitters`): a given field or option uuid is kept;
 *   `submitter_uuid` or `role` names the role (the first role by default); areas by AREA_RULE, an
 *   `attachment_uuid` naming one of the template's documents.
 * Submissions already made keep their own copy. Raises template.updated, and template.archived when
 * this call archived it (reference §6: PUT archived:true when it changes). All checks run before
 * anything is stored.
 * @returns id, the new updated_at, and `archived`: whether this call archived it (it was not archived before)
 * @throws AppError NOT_FOUND / FORBIDDEN / VALIDATION (naming the field, area or role: "uuid "…" is
 *   given to two roles in `submitters`.", "give roles or submitters, not both.", buildFields' messages)
 */
export async function updateTemplate(
  deps: TemplateChangeDeps,
  actor: Actor,
  id: number,
  input: z.input<typeof TemplateChanges>,
): Promise<{ id: number; updatedAt: Date; archived: boolean }> {
  const changes = parseInput(TemplateChanges, input);
  if (changes.roles !== undefined && changes.submitters !== undefined)
    throw new AppError('VALIDATION', 'give roles (renames by position) or submitters (the whole list), not both.');
  return deps.effects.transaction(async (tx, effects) => {
    await findTemplateForAccount(tx, { id, accountId: actor.accountId, folders: actor.folders });
    const template = await tx.template.findUniqueOrThrow({
      where: { id },
      select: {
        submitters: true,
        fields: true,
        archivedAt: true,
        documents: { orderBy: { position: 'asc' }, select: { uuid: true, file: { select: { pages: true } } } },
      },
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
        folders: actor.folders,
      });
      data.folder = { connect: { id: folder.id } };
    }
    let roles = parseRoles(template.submitters);
    if (changes.roles !== undefined) {
      const renamed = changes.roles.map((name, i) => ({ name, uuid: roles[i]?.uuid ?? randomUUID() }));
      // Roles beyond the list keep their names (DocuSeal renames by index only).
      roles = [...renamed, ...roles.slice(renamed.length)];
    }
    if (changes.submitters !== undefined) roles = replacedRoles(changes.submitters);
    let fields: Field[] | undefined;
    if (changes.fields !== undefined) {
      fields = buildFields({
        documents: template.documents.map((d) => ({
          uuid: d.uuid,
          pages: (d.file.pages ?? []) as unknown as PdfPage[],
        })),
        tagged: [],
        requestFields: [{ fields: changes.fields, path: 'fields' }],
        existingRoles: roles,
        allowNewRoles: false,
        storedDocuments: true,
      }).fields;
    } else if (changes.submitters !== undefined) {
      const kept = parseFields(template.fields).filter((f) => roles.some((r) => r.uuid === f.submitter_uuid));
      // As DocuSeal's builder removes a field: other fields' conditions naming it go with it.
      fields = kept.map((f) => {
        if (!f.conditions) return f;
        const { conditions, ...rest } = f;
        const left = conditions.filter((c) => kept.some((other) => other.uuid === c.field_uuid));
        return left.length > 0 ? { ...rest, conditions: left } : rest;
      });
    }
    if (changes.roles !== undefined || changes.submitters !== undefined)
      data.submitters = roles as unknown as Prisma.InputJsonValue;
    if (fields !== undefined) {
      checkTemplateFieldsSize(fields, roles);
      data.fields = fields as unknown as Prisma.InputJsonValue;
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
 * The roles of an update's `submitters`, in order: a given uuid kept, a new one made otherwise.
 * @throws AppError VALIDATION "uuid "…" is given to two roles in `submitters`.", "name "…" is given to two roles …"
 */
function replacedRoles(submitters: { name: string; uuid?: string | undefined }[]): Role[] {
  const roles = submitters.map((s) => ({ name: s.name, uuid: s.uuid ?? randomUUID() }));
  roles.forEach((role, i) => {
    if (roles.findIndex((r) => r.uuid === role.uuid) !== i)
      throw new AppError('VALIDATION', `uuid "${role.uuid}" is given to two roles in \`submitters[${i}]\`.`);
    // Roles are found by name case-insensitively (fields' `role`, submissions' `role`).
    if (roles.findIndex((r) => r.name.toLowerCase() === role.name.toLowerCase()) !== i)
      throw new AppError('VALIDATION', `name "${role.name}" is given to two roles in \`submitters[${i}]\`.`);
  });
  return roles;
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
    const template = await findTemplateForAccount(tx, { id, accountId: actor.accountId, folders: actor.folders });
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
    const template = await findTemplateForAccount(tx, { id, accountId: actor.accountId, folders: actor.folders });
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
    await findTemplateForAccount(tx, { id, accountId: actor.accountId, folders: actor.folders });
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
              folders: actor.folders,
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
