/**
 * DocuSeal's template JSON (reference/docuseal-behaviour.md §5.5; interface spec "Template"),
 * from the read model the GraphQL fragment below selects. The one definition of this shape: the
 * REST routes (rest-compat, routes/templates.ts) and the template.* webhooks
 * (src/webhooks/payloads.ts) both answer with serializeTemplate.
 */

import { serializeUser } from './user.ts';

/** Everything the DocuSeal template JSON needs. Spread into operations with `...RestTemplate`. */
export const TEMPLATE_FRAGMENT = /* GraphQL */ `
  fragment RestTemplate on Template {
    id slug name source externalId sharedLink preferences accountId authorId folderId folderName
    createdAt updatedAt archivedAt
    author { id email firstName lastName }
    roles { uuid name }
    schema { attachmentUuid name }
    fields {
      uuid submitterUuid name type required readonly defaultValue title description preferences validation
      options { value uuid }
      conditions { fieldUuid value action operation }
      areas { x y w h page attachmentUuid optionUuid cellW }
    }
    documents { id uuid url previewImageUrl filename }
  }
`;

export interface TemplateData {
  id: number;
  slug: string;
  name: string;
  source: string;
  externalId: string | null;
  sharedLink: boolean;
  preferences: unknown;
  accountId: number;
  authorId: number | null;
  folderId: number | null;
  folderName: string;
  createdAt: string;
  updatedAt: string;
  archivedAt: string | null;
  author: { id: number; email: string; firstName: string | null; lastName: string | null } | null;
  roles: { uuid: string; name: string }[];
  schema: { attachmentUuid: string; name: string }[];
  fields: TemplateFieldData[];
  documents: { id: number; uuid: string; url: string; previewImageUrl: string | null; filename: string }[];
}

/** A field of the read model (templates' and submissions' copies alike). */
export interface TemplateFieldData {
  uuid: string;
  submitterUuid: string;
  name: string;
  type: string;
  required: boolean;
  readonly: boolean;
  defaultValue: unknown;
  title: string | null;
  description: string | null;
  preferences: unknown;
  validation: unknown;
  options: { value: string; uuid: string }[] | null;
  /** Null when the field has none. */
  conditions: { fieldUuid: string; value: string | null; action: string; operation: string | null }[] | null;
  areas: {
    x: number;
    y: number;
    w: number;
    h: number;
    page: number;
    attachmentUuid: string;
    optionUuid: string | null;
    cellW: number | null;
  }[];
}

/** Drops keys whose value is null (optional keys DocuSeal leaves out of field objects). */
function compact<T extends Record<string, unknown>>(object: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(object).filter(([, value]) => value !== null && value !== undefined),
  ) as Partial<T>;
}

/**
 * A field as DocuSeal's JSON has it (§5.5, §11): a template's `fields`, and a submission's own
 * copy of them under `include=fields` (Submissions::SerializeForApi).
 */
export function serializeTemplateField(f: TemplateFieldData) {
  return {
    uuid: f.uuid,
    submitter_uuid: f.submitterUuid,
    name: f.name,
    type: f.type,
    required: f.required,
    ...(f.readonly ? { readonly: true } : {}),
    ...compact({ default_value: f.defaultValue, title: f.title, description: f.description }),
    preferences: f.preferences ?? {},
    ...(f.options ? { options: f.options.map((o) => ({ value: o.value, uuid: o.uuid })) } : {}),
    ...(f.validation ? { validation: f.validation } : {}),
    // DocuSeal's keys; a field without conditions has no key, as in DocuSeal's JSON.
    ...(f.conditions
      ? {
          conditions: f.conditions.map((c) => ({
            field_uuid: c.fieldUuid,
            value: c.value,
            action: c.action,
            ...(c.operation ? { operation: c.operation } : {}),
          })),
        }
      : {}),
    areas: f.areas.map((a) => ({
      x: a.x,
      y: a.y,
      w: a.w,
      h: a.h,
      attachment_uuid: a.attachmentUuid,
      page: a.page,
      ...compact({ option_uuid: a.optionUuid, cell_w: a.cellW }),
    })),
  };
}

/** The full template JSON (GET /templates/{id}, list items, create and clone responses). */
export function serializeTemplate(t: TemplateData) {
  return {
    id: t.id,
    slug: t.slug,
    name: t.name,
    schema: t.schema.map((d) => ({ attachment_uuid: d.attachmentUuid, name: d.name })),
    fields: t.fields.map(serializeTemplateField),
    submitters: t.roles.map((r) => ({ name: r.name, uuid: r.uuid })),
    author_id: t.authorId,
    account_id: t.accountId,
    archived_at: t.archivedAt,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
    source: t.source,
    folder_id: t.folderId,
    folder_name: t.folderName,
    external_id: t.externalId,
    application_key: t.externalId,
    shared_link: t.sharedLink,
    preferences: t.preferences ?? {},
    variables_schema: {},
    author: t.author ? serializeUser(t.author) : null,
    documents: t.documents.map((d) => ({
      id: d.id,
      uuid: d.uuid,
      url: d.url,
      preview_image_url: d.previewImageUrl,
      filename: d.filename,
    })),
  };
}
