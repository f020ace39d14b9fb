/**
 * Creating a template from prepared documents, or, when `externalId` names an existing template
 * of the account, replacing that template's documents and fields (interface spec: "an existing
 * template with the same external_id is updated with the new document").
 *
 * Order (STYLE.md): validate everything (fields, areas, folder name) → render previews
 * (planTemplate) → one transaction writing the stored-file rows, the folder, the template, its
 * documents (writeTemplate) and the template event (file bytes go to content-addressed storage,
 * harmless if it rolls back). A one-off submission (src/submissions/create-one-off-submission.ts)
 * plans the same way and writes the template in the transaction that writes its submission.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { parseInput } from '../accounts/api-keys.ts';
import type { Db } from '../db/client.ts';
import { templateEvents, type TemplateChangeDeps } from './template-events.ts';
import { mergePdfs } from '../documents/merge-pdfs.ts';
import { assertPdfEditable, PREVIEW_WIDTH_PX, renderPagePng, type PdfPage } from '../documents/pdf.ts';
import type { FileStorage } from '../documents/storage.ts';
import { storeFile } from '../documents/store-file.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { buildFields, type RequestFieldGroup, type TaggedField } from './build-fields.ts';
import type { Field, Role, SchemaDocument } from './fields.ts';
import { type KeyFolders, templatesInFolders } from '../accounts/key-scopes.ts';
import { findOrCreateFolder, folderPath } from './folders.ts';
import {
  type CreateTemplateFromFileRequest,
  type CreateTemplateFromHtmlRequest,
  TemplateNames,
} from './template-requests.ts';

/** A document ready to keep: the final PDF (tags removed), its pages and the fields tagged in it. */
export interface PreparedDocument {
  /** Document name (DocuSeal `schema[].name`); the file is `<name>.pdf`. */
  name: string;
  /** Where it is in the request, for messages ("documents[0]"); default its place in `documents`. */
  label?: string | undefined;
  pdf: Uint8Array;
  pages: PdfPage[];
  tagged: TaggedField[];
}

export interface SaveTemplateInput {
  accountId: number;
  userId: number;
  /** Template name; default: the first document's name (kept as is when updating). */
  name?: string | undefined;
  externalId?: string | undefined;
  folderName?: string | undefined;
  /**
   * The folders the caller's key is limited to (src/accounts/key-scopes.ts; null or absent: every
   * folder): the template goes into one of them (the first when no folder is named), and
   * `externalId` finds only a template in them.
   */
  folders?: KeyFolders | null | undefined;
  /** "api" for templates created through the API; ONE_OFF_TEMPLATE_SOURCE for a one-off submission's. */
  source: string;
  sharedLink?: boolean | undefined;
  documents: PreparedDocument[];
  requestFields: RequestFieldGroup[];
  /**
   * One document of them all (`merge_documents: true` of POST /submissions/pdf|docx|html; OpenAPI:
   * "Set `true` to merge the documents into a single PDF file."): see mergePlannedDocuments.
   */
  mergeDocuments?: boolean | undefined;
}

/**
 * The `source` of the template a one-off submission is made from (POST /submissions/pdf|docx|html,
 * src/submissions/create-one-off-submission.ts): such templates are not listed among the account's.
 */
export const ONE_OFF_TEMPLATE_SOURCE = 'one_off';

const SLUG_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz123456789';

/**
 * Checks a create request (src/templates/template-requests.ts, DocuSeal's keys) before any work
 * on its documents: the sizes of its own parts (src/limits.ts: name, external id, folder name, the
 * number of documents and their names, the number of fields) and each field (RequestField; buildFields
 * reads them again with their documents' pages). Each document's bytes are checked by the document checks.
 * @throws AppError VALIDATION "name is too long (maximum is 255 characters).",
 *   "documents has too many entries (maximum is 50).", "name is required in `fields[0].name`.", …
 */
export function checkTemplateRequest(
  schema: typeof CreateTemplateFromFileRequest | typeof CreateTemplateFromHtmlRequest,
  input: unknown,
): void {
  parseInput(schema, input);
}

/** A 14-character slug like DocuSeal's ("opaKWh8WWTAcVG"). */
export function generateSlug(): string {
  const bytes = randomBytes(14);
  return Array.from(bytes, (b) => SLUG_ALPHABET[b % SLUG_ALPHABET.length]).join('');
}

/** A template checked and its documents staged, not yet written (planTemplate). */
export interface PlannedTemplate {
  /** Each document's new uuid (its `attachment_uuid`) and pages, in order. */
  layouts: { uuid: string; pages: PdfPage[] }[];
  roles: Role[];
  fields: Field[];
  staged: StagedDocument[];
  /**
   * Documents already stored (other templates' files, shared) placed after the staged ones; none
   * unless the caller adds some (a one-off submission's `template_ids`).
   */
  linked: { uuid: string; fileId: number; name: string }[];
  /** DocuSeal's `schema`: the documents in order, the linked ones included. */
  schema: SchemaDocument[];
}

/**
 * Checks a template to save and stages its documents (previews rendered), writing nothing:
 * names and sizes (src/limits.ts), the fields of the request and of the documents' tags
 * (buildFields), the folder name.
 * @throws AppError VALIDATION naming the field
 */
export async function planTemplate(deps: { db: Db }, input: SaveTemplateInput): Promise<PlannedTemplate> {
  parseInput(TemplateNames, { name: input.name, external_id: input.externalId, folder_name: input.folderName });
  const layouts = input.documents.map((doc) => ({ uuid: randomUUID(), pages: doc.pages }));
  const { roles, fields } = buildFields({
    documents: layouts,
    tagged: input.documents.map((doc) => doc.tagged),
    taggedLabels: input.documents.map((doc, i) => doc.label ?? `documents[${i}]`),
    requestFields: input.requestFields,
  });
  if (input.folderName) folderPath(input.folderName);
  const merged =
    input.mergeDocuments && input.documents.length > 1
      ? await mergePlannedDocuments(input, layouts, fields, input.name || input.documents[0]!.name)
      : { documents: input.documents, layouts };
  const staged: StagedDocument[] = [];
  for (const doc of merged.documents) staged.push(await stageDocument(deps.db, input.accountId, doc));
  const schema = merged.documents.map((doc, i) => ({ attachment_uuid: merged.layouts[i]!.uuid, name: doc.name }));
  return { layouts: merged.layouts, roles, fields, staged, linked: [], schema };
}

/**
 * The documents of a planned template as one (`merge_documents`): their PDFs merged in order
 * (mergePdfs: mupdf page grafting, at most MAX_MERGED_PAGES pages), named `name` (the template's,
 * as PUT /templates/{id}/documents `merge` names the merged document), with the first document's
 * uuid; every field's areas moved onto it (`page` shifted by the pages before their document).
 * @param fields changed in place
 * @throws AppError VALIDATION over the merge's limits (merge-pdfs.ts)
 */
async function mergePlannedDocuments(
  { documents, accountId }: Pick<SaveTemplateInput, 'documents' | 'accountId'>,
  layouts: { uuid: string; pages: PdfPage[] }[],
  fields: Field[],
  name: string,
): Promise<{ documents: PreparedDocument[]; layouts: { uuid: string; pages: PdfPage[] }[] }> {
  const pages = layouts.flatMap((layout) => layout.pages);
  const pdf = new Uint8Array(
    await mergePdfs(
      documents.map((doc) => doc.pdf),
      { owner: accountId },
    ),
  );
  // pdf-lib draws on it at completion: checked as every stored document is.
  await assertPdfEditable(pdf, 'documents', pages.length, accountId);
  const offsets = new Map<string, number>();
  let before = 0;
  for (const layout of layouts) {
    offsets.set(layout.uuid, before);
    before += layout.pages.length;
  }
  const uuid = layouts[0]!.uuid;
  for (const field of fields)
    for (const area of field.areas ?? []) {
      const offset = offsets.get(area.attachment_uuid);
      if (offset === undefined) continue;
      area.page += offset;
      area.attachment_uuid = uuid;
    }
  return { documents: [{ name, pdf, pages, tagged: [] }], layouts: [{ uuid, pages }] };
}

/**
 * Saves a template. Validation errors (AppError VALIDATION naming the field; sizes: src/limits.ts)
 * are raised before anything is stored.
 * @returns the template id and whether it was created (false: updated through externalId)
 */
export async function saveTemplate(
  deps: TemplateChangeDeps & { storage: FileStorage },
  input: SaveTemplateInput,
): Promise<{ templateId: number; created: boolean }> {
  const planned = await planTemplate(deps, input);
  return deps.effects.transaction(async (tx, effects) => {
    const saved = await writeTemplate(tx, deps.storage, input, planned);
    const eventType = saved.created ? 'template.created' : 'template.updated';
    await tx.templateEvent.create({
      data: { accountId: input.accountId, templateId: saved.templateId, userId: input.userId, eventType },
    });
    effects.events.push(...templateEvents(input.accountId, saved.templateId, [eventType]));
    return saved;
  });
}

/**
 * Writes a planned template inside the caller's transaction: the stored files, the folder, the
 * template (or, with `externalId`, the existing one's documents and fields replaced) and its
 * documents (the linked ones after the staged ones). No template event: the caller records the one its change is.
 * @returns the template id and whether it was created
 */
export async function writeTemplate(
  tx: Prisma.TransactionClient,
  storage: FileStorage,
  input: SaveTemplateInput,
  planned: PlannedTemplate,
): Promise<{ templateId: number; created: boolean }> {
  const { layouts, roles, fields, staged, schema } = planned;
  const files: { id: number }[] = [];
  for (const doc of staged) files.push(await storeStagedDocument(tx, storage, input.accountId, doc));
  const existing = input.externalId
    ? await tx.template.findFirst({
        where: {
          accountId: input.accountId,
          externalId: input.externalId,
          archivedAt: null,
          ...templatesInFolders(input.folders ?? null),
        },
        orderBy: { id: 'desc' },
        select: { id: true },
      })
    : null;
  const folder =
    input.folderName !== undefined || !existing
      ? await findOrCreateFolder(tx, {
          accountId: input.accountId,
          authorId: input.userId,
          fullName: input.folderName,
          folders: input.folders,
        })
      : undefined;
  const data = {
    submitters: roles as unknown as Prisma.InputJsonValue,
    fields: fields as unknown as Prisma.InputJsonValue,
    schema: schema as unknown as Prisma.InputJsonValue,
    ...(folder ? { folderId: folder.id } : {}),
    ...(input.sharedLink !== undefined ? { sharedLink: input.sharedLink } : {}),
  };
  let templateId: number;
  if (existing) {
    templateId = existing.id;
    await tx.templateDocument.deleteMany({ where: { templateId } });
    await tx.template.update({
      where: { id: templateId },
      data: { ...data, ...(input.name ? { name: input.name } : {}) },
    });
  } else {
    const template = await tx.template.create({
      data: {
        ...data,
        accountId: input.accountId,
        authorId: input.userId,
        slug: generateSlug(),
        name: input.name || input.documents[0]?.name || 'Template',
        externalId: input.externalId ?? null,
        source: input.source,
        // DocuSeal's create endpoints default shared_link to true (reference §12.3, OpenAPI).
        sharedLink: input.sharedLink ?? true,
      },
      select: { id: true },
    });
    templateId = template.id;
  }
  await tx.templateDocument.createMany({
    data: [
      // The planned documents (one when merged), not necessarily the input's.
      ...staged.map(({ doc }, i) => ({ uuid: layouts[i]!.uuid, fileId: files[i]!.id, name: doc.name })),
      ...planned.linked,
    ].map((doc, position) => ({ ...doc, templateId, position })),
  });
  return { templateId, created: !existing };
}

/** A document's preview, decided before the transaction (rendering is the slow part). */
export interface StagedDocument {
  doc: PreparedDocument;
  /** An existing page-0 preview image of identical bytes in the account, to reuse. */
  existingImageFileId: number | undefined;
  /** Otherwise the freshly rendered page 0 (PNG, 1400 px wide; reference §12.2). */
  png: Buffer | undefined;
}

/** Renders page 0 unless the account already has a preview of the same bytes. */
export async function stageDocument(db: Db, accountId: number, doc: PreparedDocument): Promise<StagedDocument> {
  const sha256 = createHash('sha256').update(doc.pdf).digest('hex');
  const existing = await db.documentPreview.findFirst({
    where: { page: 0, file: { sha256, accountId } },
    select: { imageFileId: true },
  });
  return {
    doc,
    existingImageFileId: existing?.imageFileId,
    png: existing ? undefined : await renderPagePng(doc.pdf, 0, PREVIEW_WIDTH_PX, accountId),
  };
}

/**
 * Stores a staged document's PDF and preview as StoredFile rows inside the caller's transaction
 * (the bytes go to content-addressed storage; rows roll back with the transaction).
 * @returns the PDF's StoredFile row
 */
export async function storeStagedDocument(
  tx: Prisma.TransactionClient,
  storage: FileStorage,
  accountId: number,
  staged: StagedDocument,
) {
  const { doc } = staged;
  const filename = /\.pdf$/i.test(doc.name) ? doc.name : `${doc.name}.pdf`;
  const stored = await storeFile(
    { db: tx, storage },
    {
      accountId,
      bytes: doc.pdf,
      filename,
      contentType: 'application/pdf',
      pageCount: doc.pages.length,
      pages: doc.pages,
    },
  );
  const imageFileId =
    staged.existingImageFileId ??
    (
      await storeFile(
        { db: tx, storage },
        { accountId, bytes: staged.png!, filename: '0.png', contentType: 'image/png' },
      )
    ).id;
  await tx.documentPreview.create({ data: { fileId: stored.id, page: 0, imageFileId } });
  return stored;
}
