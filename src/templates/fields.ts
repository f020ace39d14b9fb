/**
 * Template roles, fields and areas: the JSON kept in templates.submitters / fields / schema and
 * copied into submissions. Shapes are DocuSeal's (reference/docuseal-behaviour.md §5.5, §11) so
 * the REST layer can emit them as they are. The type vocabulary (FIELD_TYPES …) is src/field-types.ts,
 * below the documents and rendering layers that read tags naming it.
 */
import { z } from 'zod';

/** The single role a template has when nobody named one (DocuSeal's default). */
export const DEFAULT_ROLE_NAME = 'First Party';

export const Area = z.object({
  /** Fractions (0..1) of the displayed page; y from the top. */
  x: z.number(),
  y: z.number(),
  w: z.number(),
  h: z.number(),
  /** 0-based page of the document. */
  page: z.number().int(),
  attachment_uuid: z.string(),
  option_uuid: z.string().optional(),
  cell_w: z.number().optional(),
});
export type Area = z.infer<typeof Area>;

export const FieldOption = z.object({ value: z.string(), uuid: z.string() });

/**
 * A stored condition (src/templates/field-conditions.ts has the rule): read leniently, as
 * DocuSeal keeps what its builder wrote; build-fields.ts checks what a request gives.
 */
export const StoredCondition = z.object({
  field_uuid: z.string(),
  value: z.union([z.string(), z.number(), z.boolean()]).nullable().optional(),
  action: z.string(),
  operation: z.string().optional(),
});

export const Field = z.object({
  uuid: z.string(),
  submitter_uuid: z.string(),
  name: z.string(),
  type: z.string(),
  required: z.boolean(),
  readonly: z.boolean().optional(),
  /** A prefilled value: text, number, checkbox, or the chosen options of a `multiple` field. */
  default_value: z
    .union([z.string(), z.number(), z.boolean(), z.array(z.string())])
    .nullable()
    .optional(),
  title: z.string().optional(),
  description: z.string().optional(),
  preferences: z.record(z.string(), z.unknown()).default({}),
  options: z.array(FieldOption).optional(),
  validation: z.record(z.string(), z.unknown()).optional(),
  /** Show (and require) the field only while these hold (field-conditions.ts). */
  conditions: z.array(StoredCondition).optional(),
  areas: z.array(Area).default([]),
});
export type Field = z.infer<typeof Field>;

/**
 * Fields whose uuids (and their options' uuids) were renewed (clone, merge), with their conditions
 * pointing at the renewed ones: `field_uuid`, and `value` where it is a renewed option uuid
 * (DocuSeal remaps conditions on clone, reference/docuseal-behaviour.md §8.2).
 * @param renewed old uuid → new uuid, for fields and options
 */
export function remapConditions(fields: Field[], renewed: ReadonlyMap<string, string>): Field[] {
  return fields.map((field) =>
    field.conditions
      ? {
          ...field,
          conditions: field.conditions.map((c) => ({
            ...c,
            field_uuid: renewed.get(c.field_uuid) ?? c.field_uuid,
            ...(typeof c.value === 'string' && renewed.has(c.value) ? { value: renewed.get(c.value)! } : {}),
          })),
        }
      : field,
  );
}

export const Role = z.object({ name: z.string(), uuid: z.string() });
export type Role = z.infer<typeof Role>;

export const SchemaDocument = z.object({ attachment_uuid: z.string(), name: z.string() });
export type SchemaDocument = z.infer<typeof SchemaDocument>;

/** Parses the JSON columns of a template (or a submission's copy). */
export const parseFields = (value: unknown): Field[] => z.array(Field).parse(value);
export const parseRoles = (value: unknown): Role[] => z.array(Role).parse(value);
export const parseSchema = (value: unknown): SchemaDocument[] => z.array(SchemaDocument).parse(value);
