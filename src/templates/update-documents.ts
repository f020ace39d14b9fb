/**
 * `PUT /templates/{id}/documents` (interface spec "Templates"; OpenAPI): add documents at a
 * position, replace the document at a position (its fields move to the new one when the new one
 * brings none), remove by position or name, and optionally merge everything into one PDF.
 * Operations apply in order; all are validated before anything is stored.
 */
import { randomUUID } from 'node:crypto';
import { templateEvents, type TemplateChangeDeps } from './template-events.ts';
import type { PdfPage } from '../documents/pdf.ts';
import type { FileStorage } from '../documents/storage.ts';
import { AppError } from '../errors.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { checkItems, MAX_ITEMS } from '../limits.ts';
import { buildFields, checkTemplateFieldsSize } from './build-fields.ts';
import { parseFields, parseRoles, type Field } from './fields.ts';
import type { KeyFolders } from '../accounts/key-scopes.ts';
import { findTemplateForAccount } from './find-template.ts';
import { stageDocument, storeStagedDocument, type PreparedDocument, type StagedDocument } from './save-template.ts';
import type { DocumentOperation } from './template-requests.ts';

/** An operation with its new document already prepared (loaded, converted, tags found). */
export interface PreparedOperation extends DocumentOperation {
  prepared?: PreparedDocument;
}

interface WorkingDocument {
  uuid: string;
  name: string;
  pages: PdfPage[];
  /** Existing stored file, or a new document to store. */
  fileId?: number;
  storageKey?: string;
  prepared?: PreparedDocument;
}

/**
 * Applies document operations to a template.
 * @throws AppError NOT_FOUND / FORBIDDEN; VALIDATION for a position or name that matches no
 *   document, an operation with neither file nor html, a tag naming a role the template lacks,
 *   or removing the last document
 */
export async function updateTemplateDocuments(
  deps: TemplateChangeDeps & { storage: FileStorage },
  actor: { accountId: number; userId: number; folders?: KeyFolders | null | undefined },
  id: number,
  operations: PreparedOperation[],
  options: { merge?: boolean } = {},
): Promise<void> {
  await findTemplateForAccount(deps.db, { id, accountId: actor.accountId, folders: actor.folders });
  const template = await deps.db.template.findUniqueOrThrow({
    where: { id },
    include: {
      documents: {
        orderBy: { position: 'asc' },
        include: { file: { select: { id: true, pages: true, storageKey: true } } },
      },
    },
  });
  const roles = parseRoles(template.submitters);
  let fields = parseFields(template.fields);
  const docs: WorkingDocument[] = template.documents.map((d) => ({
    uuid: d.uuid,
    name: d.name,
    pages: (d.file.pages ?? []) as unknown as PdfPage[],
    fileId: d.file.id,
    storageKey: d.file.storageKey,
  }));

  // A field that loses its last area goes with it; fields that never had areas stay.
  const rewriteAreas = (rewrite: (area: Field['areas'][number]) => Field['areas'][number] | null) => {
    fields = fields.flatMap((f) => {
      if (f.areas.length === 0) return [f];
      const areas = f.areas.map(rewrite).filter((a): a is Field['areas'][number] => a !== null);
      return areas.length > 0 ? [{ ...f, areas }] : [];
    });
  };
  const dropAreasOf = (uuid: string) => rewriteAreas((a) => (a.attachment_uuid === uuid ? null : a));

  operations.forEach((op, i) => {
    const label = `documents[${i}]`;
    if (op.remove) {
      const index = op.position !== undefined ? op.position : docs.findIndex((d) => d.name === op.name);
      if (index < 0 || index >= docs.length) {
        const which = op.position !== undefined ? `at position ${op.position}` : `named "${op.name ?? ''}"`;
        throw new AppError('VALIDATION', `no document ${which} to remove in \`${label}\`.`);
      }
      const [removed] = docs.splice(index, 1);
      dropAreasOf(removed!.uuid);
      return;
    }
    if (!op.prepared) throw new AppError('VALIDATION', `file or html is required in \`${label}\`.`);
    const incoming: WorkingDocument = {
      uuid: randomUUID(),
      name: op.prepared.name,
      pages: op.prepared.pages,
      prepared: op.prepared,
    };
    const { fields: tagged } = buildFields({
      documents: [incoming],
      tagged: [op.prepared.tagged],
      requestFields: [],
      existingRoles: roles,
      allowNewRoles: false,
      taggedLabels: [label],
    });
    if (op.replace) {
      const index = op.position ?? docs.length - 1;
      if (index < 0 || index >= docs.length)
        throw new AppError('VALIDATION', `no document at position ${index} to replace in \`${label}\`.`);
      const old = docs[index]!;
      docs[index] = incoming;
      if (tagged.length === 0) {
        // The new document brings no fields: the old one's move over (areas beyond its pages go).
        rewriteAreas((a) =>
          a.attachment_uuid !== old.uuid
            ? a
            : a.page < incoming.pages.length
              ? { ...a, attachment_uuid: incoming.uuid }
              : null,
        );
      } else {
        dropAreasOf(old.uuid);
        fields.push(...tagged);
      }
      return;
    }
    const position = Math.min(op.position ?? docs.length, docs.length);
    docs.splice(position, 0, incoming);
    fields.push(...tagged);
  });
  if (docs.length === 0) throw new AppError('VALIDATION', 'A template needs at least one document.');
  checkItems(docs, MAX_ITEMS.documents, 'documents');
  checkTemplateFieldsSize(fields, roles);

  let final = docs;
  if (options.merge && docs.length > 1) {
    final = [
      await mergeDocuments(deps.storage, docs, template.name, (offsets, mergedUuid) => {
        fields = fields.map((f) => ({
          ...f,
          areas: f.areas.map((a) => {
            const offset = offsets.get(a.attachment_uuid);
            return offset === undefined ? a : { ...a, attachment_uuid: mergedUuid, page: a.page + offset };
          }),
        }));
      }),
    ];
  }

  // Render previews of new documents, then write everything in one transaction.
  const staged = new Map<WorkingDocument, StagedDocument>();
  for (const doc of final)
    if (doc.prepared) staged.set(doc, await stageDocument(deps.db, actor.accountId, doc.prepared));
  await deps.effects.transaction(async (tx, effects) => {
    for (const [doc, stage] of staged)
      doc.fileId = (await storeStagedDocument(tx, deps.storage, actor.accountId, stage)).id;
    await tx.templateDocument.deleteMany({ where: { templateId: id } });
    await tx.templateDocument.createMany({
      data: final.map((doc, position) => ({
        uuid: doc.uuid,
        templateId: id,
        fileId: doc.fileId!,
        name: doc.name,
        position,
      })),
    });
    await tx.template.update({
      where: { id },
      data: {
        fields: fields as unknown as Prisma.InputJsonValue,
        schema: final.map((d) => ({ attachment_uuid: d.uuid, name: d.name })) as unknown as Prisma.InputJsonValue,
        updatedAt: new Date(),
      },
    });
    await tx.templateEvent.create({
      data: { accountId: actor.accountId, templateId: id, userId: actor.userId, eventType: 'template.updated' },
    });
    effects.events.push(...templateEvents(actor.accountId, id, ['template.updated']));
  });
}

/** Concatenates the documents' PDFs into one; `remap` gets each old uuid's page offset. */
async function mergeDocuments(
  storage: FileStorage,
  docs: WorkingDocument[],
  name: string,
  remap: (offsets: Map<string, number>, mergedUuid: string) => void,
): Promise<WorkingDocument> {
  const { PDFDocument } = await import('pdf-lib');
  const merged = await PDFDocument.create();
  const offsets = new Map<string, number>();
  const pages: PdfPage[] = [];
  for (const doc of docs) {
    offsets.set(doc.uuid, pages.length);
    const bytes = doc.prepared ? doc.prepared.pdf : await storage.read(doc.storageKey!);
    const source = await PDFDocument.load(bytes);
    const copied = await merged.copyPages(source, source.getPageIndices());
    for (const page of copied) merged.addPage(page);
    pages.push(...doc.pages);
  }
  const uuid = randomUUID();
  remap(offsets, uuid);
  const pdf = await merged.save();
  return { uuid, name, pages, prepared: { name, pdf, pages, tagged: [] } };
}
