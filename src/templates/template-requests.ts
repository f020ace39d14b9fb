/**
 * The template requests, each defined once as a zod object in DocuSeal's keys (DESIGN.md "Each
 * input is defined once"; interface spec "Templates", reference/docuseal-behaviour.md §8.2):
 * create from PDF/DOCX files or from HTML, update, clone, merge, and document changes. GraphQL's
 * input types are derived from them (src/graphql/zod-input.ts: `CreateTemplateFromFileInput`,
 * `UpdateTemplateInput`, …, camelCase keys) and so is the REST body reading (rest-compat/params.ts
 * restInput); the services parse what they get with the same schemas. Sizes: src/limits.ts
 * (docs/security.md "Input limits"); a field of a create request is RequestField
 * (src/templates/build-fields.ts).
 */
import { z } from 'zod';
import { list, MAX_ITEMS, MAX_LENGTH, text } from '../limits.ts';
import { RequestField, type RequestFieldGroup } from './build-fields.ts';

/** A template's name when given: not blank (trimmed). */
const templateName = () => z.string().trim().min(1, 'name must not be empty').max(MAX_LENGTH.name);

/** Role names by position (DocuSeal §8.2): none blank. */
const roleNames = () =>
  list(z.string().trim().min(1, 'roles must not contain empty names').max(MAX_LENGTH.name), MAX_ITEMS.roles);

const externalId = () => text(MAX_LENGTH.externalId);
const folderName = () => text(MAX_LENGTH.folderName);

/**
 * A document's 0-based position (PUT /templates/{id}/documents; create requests' `documents[].position`):
 * where it goes among the documents placed before it (documentOrder).
 */
const documentPosition = () =>
  z.number().int('position must be an integer').min(0, 'position must be 0 or more').optional();

/**
 * The order of a create request's documents (`documents[].position`, OpenAPI POST /submissions/pdf:
 * "Document position in the submission. If not specified, the document will be added in the order it
 * appears in the documents array."): each document in turn is inserted at its `position` among those
 * placed before it (past the end: last), else appended; the rule of PUT /templates/{id}/documents
 * (src/templates/update-documents.ts), so `position` means the same on every route.
 * @returns the request indexes in the final order ([0, 1, …] when no document has a position)
 */
export function documentOrder(documents: readonly { position?: number | undefined }[]): number[] {
  const order: number[] = [];
  documents.forEach((doc, i) => {
    order.splice(Math.min(doc.position ?? order.length, order.length), 0, i);
  });
  return order;
}

const POSITION_DESCRIPTION = '0-based place among the documents before it in the list (default: after them).';

/** A document of a create-from-file request (GraphQL `TemplateFileDocumentInput`). */
export const TemplateFileDocument = z.object({
  name: text(MAX_LENGTH.name).optional(),
  file: z.string().meta({ description: 'Base64 of the file, or an http(s) URL to download it from.' }),
  fields: list(RequestField, MAX_ITEMS.fields)
    .optional()
    .meta({ description: 'Fields on this document (areas on its pages).' }),
  position: documentPosition().meta({ description: POSITION_DESCRIPTION }),
  dynamic: z
    .boolean()
    .optional()
    .meta({ description: 'true is refused: a DOCX is converted to PDF (no editable content, no [[variables]]).' }),
});

/**
 * POST /templates/pdf and /templates/docx (GraphQL `CreateTemplateFromFileInput`): the documents,
 * and fields given per document or for all of them.
 */
export const CreateTemplateFromFileRequest = z.object({
  name: text(MAX_LENGTH.name).optional(),
  external_id: externalId()
    .optional()
    .meta({ description: 'An existing template with it is updated with the new documents.' }),
  folder_name: folderName()
    .optional()
    .meta({ description: 'Full folder name ("Parent / Child"), created when missing.' }),
  shared_link: z.boolean().optional(),
  documents: list(TemplateFileDocument, MAX_ITEMS.documents),
  fields: list(RequestField, MAX_ITEMS.fields)
    .optional()
    .meta({ description: 'Fields whose area pages count across all documents in order.' }),
  remove_tags: z
    .boolean()
    .optional()
    .meta({ description: 'Default true; false keeps the {{text tags}} printed in the PDF (fields are still made).' }),
  flatten: z
    .boolean()
    .optional()
    .meta({ description: 'true: the PDF form fields are drawn into the pages and removed. Default false.' }),
});

/**
 * A create-from-file request's fields by where they are given: a document's own (its areas'
 * pages are that document's) or the request's (pages count across all documents in order).
 */
export function requestFieldGroups(request: {
  documents: { fields?: z.input<typeof RequestField>[] | undefined }[];
  fields?: z.input<typeof RequestField>[] | undefined;
}): RequestFieldGroup[] {
  const groups: RequestFieldGroup[] = request.documents.map((doc, i) => ({
    documentIndex: i,
    fields: doc.fields ?? [],
    path: `documents[${i}].fields`,
  }));
  groups.push({ fields: request.fields ?? [], path: 'fields' });
  return groups;
}

/** A document of a create-from-HTML request (GraphQL `TemplateHtmlDocumentInput`). */
export const TemplateHtmlDocument = z.object({
  html: z.string(),
  name: text(MAX_LENGTH.name).optional(),
  position: documentPosition().meta({ description: POSITION_DESCRIPTION }),
});

/** POST /templates/html (GraphQL `CreateTemplateFromHtmlInput`). */
export const CreateTemplateFromHtmlRequest = z.object({
  html: z.string().optional().meta({ description: 'HTML with field tags (<text-field>, <signature-field>, ...).' }),
  html_header: z.string().optional().meta({ description: 'Shown on every page.' }),
  html_footer: z.string().optional().meta({ description: 'Shown on every page.' }),
  name: text(MAX_LENGTH.name).optional().meta({ description: 'Default: a random uuid.' }),
  size: z.string().optional().meta({ description: 'Letter (default), Legal, Tabloid, Ledger, A0–A6.' }),
  external_id: externalId().optional(),
  folder_name: folderName().optional(),
  shared_link: z.boolean().optional(),
  documents: list(TemplateHtmlDocument, MAX_ITEMS.documents)
    .optional()
    .meta({ description: 'Several documents instead of `html`.' }),
});

/** A create request's own names, checked again by saveTemplate for every caller. */
export const TemplateNames = CreateTemplateFromFileRequest.pick({ name: true, external_id: true, folder_name: true });

/**
 * A role of PUT /templates/{id} `submitters` (GraphQL `TemplateRoleInput`): DocuSeal's
 * `{name, uuid}` as GET answers it; a given uuid is kept, a new one made otherwise.
 */
export const RequestRole = z.object({
  name: z.string({ error: 'name is required' }).trim().min(1, 'name is required').max(MAX_LENGTH.name),
  uuid: text(MAX_LENGTH.name).trim().min(1, 'uuid must not be empty').optional(),
});

/**
 * PUT /templates/{id} (GraphQL `UpdateTemplateInput`). `fields` and `submitters` replace the
 * template's lists (DocuSeal's templates_controller#update `@template.update!(template_params)`);
 * template-actions.ts updateTemplate has the rules.
 */
export const UpdateTemplateRequest = z.object({
  id: z.number().int(),
  name: templateName().optional(),
  folder_name: folderName().optional(),
  external_id: externalId().optional(),
  shared_link: z.boolean().optional(),
  /** A longer list appends roles (DocuSeal §8.2). */
  roles: roleNames().optional().meta({ description: 'Renames roles by position; extra names add roles.' }),
  archived: z.boolean().optional().meta({ description: 'true archives, false restores.' }),
  submitters: list(RequestRole, MAX_ITEMS.roles)
    .min(1, 'submitters must list at least one role')
    .optional()
    .meta({
      description:
        "Replaces the template's roles (a given uuid keeps a role; fields of roles not listed go, unless " +
        '`fields` is given too). Not with `roles`.',
    }),
  fields: list(RequestField, MAX_ITEMS.fields)
    .optional()
    .meta({
      description:
        "Replaces the template's fields, validated as on create; areas by the area rule (fractions with " +
        'page 0-based and attachment_uuid as GET answers them, or points with page 1-based).',
    }),
});

/** An update's changes (UpdateTemplateRequest without its id), as updateTemplate takes them. */
export const TemplateChanges = UpdateTemplateRequest.omit({ id: true });

/**
 * POST /templates/{id}/clone (GraphQL `CloneTemplateInput`). DocuSeal's body names the documents
 * as `documents: [{name}]`; the REST route reads that into `document_names`.
 */
export const CloneTemplateRequest = z.object({
  id: z.number().int(),
  name: templateName().optional().meta({ description: 'Default "<name> (Clone)".' }),
  folder_name: folderName().optional(),
  external_id: externalId().optional(),
  /** Document i's new name; null keeps it (DocuSeal §8.2). */
  document_names: list(z.string().trim().min(1).max(MAX_LENGTH.name).nullable(), MAX_ITEMS.documents)
    .optional()
    .meta({ description: 'Renames documents by position.' }),
});

/** A clone's options (CloneTemplateRequest without its id), as cloneTemplate takes them. */
export const CloneOptions = CloneTemplateRequest.omit({ id: true });

/**
 * POST /templates/merge (GraphQL `MergeTemplatesInput`). The merged template's fields and
 * documents are checked by the service too (at most what one template may hold).
 */
export const MergeTemplatesRequest = z.object({
  template_ids: list(z.number().int(), MAX_ITEMS.templateIds).min(2, 'template_ids must list at least 2 templates'),
  name: z
    .string()
    .trim()
    .min(1)
    .max(MAX_LENGTH.name)
    .optional()
    .meta({ description: 'Default "<first template name> (Merged)".' }),
  folder_name: folderName().optional(),
  external_id: externalId().optional(),
  shared_link: z.boolean().optional(),
  roles: roleNames().optional().meta({ description: 'Renames the merged roles by position.' }),
});

/**
 * One change of PUT /templates/{id}/documents (GraphQL `TemplateDocumentChangeInput`); the
 * operations apply in order (src/templates/update-documents.ts).
 */
export const DocumentOperation = z
  .object({
    name: z.string().trim().max(MAX_LENGTH.name).optional().meta({ description: 'Default: a random uuid.' }),
    /** Base64 or URL of a PDF or DOCX; loaded by the caller into `prepared`. */
    file: z.string().optional().meta({ description: 'Base64 or URL of a PDF or DOCX.' }),
    html: z.string().optional().meta({ description: 'HTML with field tags, instead of `file`.' }),
    position: documentPosition().meta({ description: '0-based.' }),
    replace: z.boolean().optional(),
    remove: z.boolean().optional(),
  })
  .meta({
    description:
      'One change: add (default, at `position` or last), `replace` the document at `position`, ' +
      'or `remove` it (by `position` or `name`).',
  });
export type DocumentOperation = z.infer<typeof DocumentOperation>;

/** PUT /templates/{id}/documents (GraphQL `UpdateTemplateDocumentsInput`). */
export const UpdateTemplateDocumentsRequest = z.object({
  id: z.number().int(),
  documents: list(DocumentOperation, MAX_ITEMS.documents),
  merge: z.boolean().optional().meta({ description: 'Merge all documents into one PDF afterwards.' }),
});
