/**
 * Turning field definitions (from a request, from text tags, from HTML field tags) into the
 * template's roles and fields (reference/docuseal-behaviour.md §5.5, §11, §12).
 *
 * Request areas are PDF points from the top-left of the page as displayed with a 1-based page
 * (DESIGN.md "area coordinates"); tag areas arrive already as page fractions.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { parseInput } from '../accounts/api-keys.ts';
import { pointsToFractions, type PdfPage } from '../documents/pdf.ts';
import { AppError } from '../errors.ts';
import {
  checkItems,
  checkJson,
  checkText,
  jsonObject,
  list,
  MAX_ITEMS,
  MAX_JSON,
  MAX_LENGTH,
  text,
} from '../limits.ts';
import { FIELD_TYPES, OPTION_FIELD_TYPES } from '../field-types.ts';
import {
  CONDITION_ACTIONS,
  CONDITION_OPERATIONS,
  optionValue,
  VALUE_ACTIONS,
  type FieldCondition,
} from './field-conditions.ts';
import { checkFieldPattern } from './field-pattern.ts';
import { DEFAULT_ROLE_NAME, type Area, type Field, type Role } from './fields.ts';

/** A document as the template will keep it: its attachment uuid and its pages as displayed. */
export interface DocumentLayout {
  uuid: string;
  pages: PdfPage[];
}

/** A field found in a document by a tag scan (text tags or HTML field tags); areas are fractions. */
export interface TaggedField {
  name: string;
  type: string;
  role?: string | undefined;
  required: boolean;
  readonly: boolean;
  defaultValue?: string | undefined;
  options?: string[] | undefined;
  preferences?: Record<string, unknown> | undefined;
  areas: { page: number; x: number; y: number; w: number; h: number }[];
}

/**
 * An area of a create request's field (GraphQL `FieldAreaInput`): PDF points from the top-left of
 * the page as displayed, page 1-based (DESIGN.md "area coordinates"). The one definition: GraphQL's
 * input type is derived from it (src/graphql/zod-input.ts).
 */
export const RequestArea = z
  .object({
    x: z.number({ error: 'x must be a number' }),
    y: z.number({ error: 'y must be a number' }),
    w: z.number({ error: 'w must be a number' }),
    h: z.number({ error: 'h must be a number' }),
    page: z.number({ error: 'page must be a number' }).int('page must be an integer'),
    option: text(MAX_LENGTH.label)
      .optional()
      .meta({ description: 'For radio and multiple fields: the option this area stands for.' }),
  })
  .meta({
    description: 'An area in PDF points (1/72 in) from the top-left corner of the page as displayed; page 1-based.',
  });

/**
 * A condition of a request's field (GraphQL `FieldConditionInput`, derived from this definition):
 * DocuSeal's `{field_uuid, value, action, operation}` (src/templates/field-conditions.ts has the
 * rule), with `field_name` as another way to name the field. buildFields checks that it names one
 * field of the template and stores DocuSeal's shape (`value` an option's uuid for option fields).
 */
export const RequestCondition = z
  .object({
    field_uuid: text(MAX_LENGTH.name)
      .optional()
      .meta({ description: 'The field it depends on: the `uuid` given to a field of the same request.' }),
    field_name: text(MAX_LENGTH.name)
      .optional()
      .meta({ description: 'Instead of field_uuid: the name of the field it depends on (case-insensitive).' }),
    value: z
      .union([text(MAX_LENGTH.label), z.number()])
      .transform(String)
      .optional()
      .meta({
        description:
          'What equal, not_equal, contains, does_not_contain, greater_than and less_than compare with; for a ' +
          'select, radio or multiple field one of its options (its value or uuid).',
      }),
    action: z
      .enum(CONDITION_ACTIONS, { error: `action must be one of: ${CONDITION_ACTIONS.join(', ')}` })
      .meta({ description: `${CONDITION_ACTIONS.join(', ')}.` }),
    operation: z
      .enum(CONDITION_OPERATIONS, { error: 'operation must be and or or' })
      .optional()
      .meta({ description: 'and (default) or or: how this condition joins the result of the ones before it.' }),
  })
  .meta({ description: 'Show (and require) the field only while this holds.' });

/**
 * A field of a create request (`fields[]`, or `documents[].fields[]`; GraphQL `TemplateFieldInput`,
 * derived from this definition). Sizes: src/limits.ts; `validation.pattern` is checked by
 * buildFields (field-pattern.ts).
 */
export const RequestField = z.object({
  name: z.string({ error: 'name is required' }).trim().min(1, 'name is required').max(MAX_LENGTH.name),
  // A token (checked against FIELD_TYPES); the name limit keeps the refusal message short.
  type: z
    .string()
    .trim()
    .max(MAX_LENGTH.name)
    .optional()
    .meta({ description: `${FIELD_TYPES[0]} (default), ${FIELD_TYPES.slice(1).join(', ')}.` }),
  role: z
    .string()
    .trim()
    .min(1, 'role must not be empty')
    .max(MAX_LENGTH.name)
    .optional()
    .meta({
      description: `Role name; roles are created in order of first appearance ("${DEFAULT_ROLE_NAME}" by default).`,
    }),
  required: z.boolean().optional().meta({ description: 'Default true.' }),
  readonly: z.boolean().optional(),
  default_value: z.union([text(MAX_LENGTH.text), z.number(), z.boolean()]).optional(),
  title: text(MAX_LENGTH.label).optional(),
  description: text(MAX_LENGTH.text).optional(),
  options: list(z.union([text(MAX_LENGTH.label), z.number()]).transform(String), MAX_ITEMS.options).optional(),
  validation: jsonObject(MAX_JSON.preferences).optional(),
  preferences: jsonObject(MAX_JSON.preferences).optional(),
  areas: list(RequestArea, MAX_ITEMS.areas).optional(),
  uuid: text(MAX_LENGTH.name)
    .trim()
    .min(1, 'uuid must not be empty')
    .optional()
    .meta({ description: "The field's uuid (default: a new random one); conditions name fields by it." }),
  conditions: list(RequestCondition, MAX_ITEMS.conditions)
    .optional()
    .meta({ description: 'Show and require the field only while these hold (DocuSeal field conditions).' }),
});
export type RequestField = z.input<typeof RequestField>;

export interface RequestFieldGroup {
  /** Fields given with one document (`documents[i].fields`): areas are on that document. */
  documentIndex?: number;
  fields: unknown[];
  /** Where these fields sit in the request, for messages: "fields" or "documents[0].fields". */
  path: string;
}

/**
 * Builds roles and fields.
 * - Roles in order of first appearance (tags first, document by document, then request fields);
 *   "First Party" when none is named. `existingRoles` (template updates) keep their uuids.
 * - Tagged fields with the same name, type and role across documents become one field with all areas.
 * - Request fields: `documents[i].fields` areas are on document i; top-level `fields` areas count
 *   pages across all documents in order (page 1 = first page of the first document).
 * @throws AppError VALIDATION naming the field (`fields[2]`, `documents[0].fields[1].areas[0]`) for a
 *   missing name, an unknown type, a page out of range, an area off the page, options on a type without
 *   them, an area option that is not one of the field's options, a `validation.pattern` RE2 cannot
 *   run (field-pattern.ts), a `uuid` two fields are given, a condition that does not name one
 *   other field of the template or does not fit it (resolveCondition), and a size over
 *   src/limits.ts: a string, more than MAX_ITEMS.fields fields, MAX_ITEMS.conditions conditions or
 *   MAX_ITEMS.roles roles, fields larger than MAX_JSON.templateFields together
 */
export function buildFields(input: {
  documents: DocumentLayout[];
  tagged: TaggedField[][];
  requestFields: RequestFieldGroup[];
  existingRoles?: Role[];
  /** False for changes to an existing template: a role it does not have is a 422. */
  allowNewRoles?: boolean;
  /** How messages name each tagged document ("documents[0]"). */
  taggedLabels?: string[];
}): { roles: Role[]; fields: Field[] } {
  const roles: Role[] = [...(input.existingRoles ?? [])];
  let where = '';
  const roleUuid = (name: string | undefined): string => {
    const wanted = name ?? roles[0]?.name ?? DEFAULT_ROLE_NAME;
    const found = roles.find((r) => r.name.toLowerCase() === wanted.toLowerCase());
    if (found) return found.uuid;
    if (input.allowNewRoles === false) {
      throw new AppError(
        'VALIDATION',
        `role "${wanted}" is not a role of this template (${roles.map((r) => r.name).join(', ')}) in \`${where}\`.`,
      );
    }
    const role = { name: wanted, uuid: randomUUID() };
    roles.push(role);
    return role.uuid;
  };

  // Counted before any is parsed: a request with a million fields is refused at once.
  for (const group of input.requestFields) checkItems(group.fields, MAX_ITEMS.fields, group.path);
  const fields: Field[] = [];
  const tagKey = new Map<string, Field>();
  input.tagged.forEach((documentFields, documentIndex) => {
    const document = input.documents[documentIndex]!;
    for (const tagged of documentFields) {
      const label = input.taggedLabels?.[documentIndex] ?? `documents[${documentIndex}]`;
      checkText(tagged.name, MAX_LENGTH.name, `${label}: a field tag's name`);
      checkText(tagged.role, MAX_LENGTH.name, `${label}: a field tag's role`);
      where = `${label}: ${tagged.name || tagged.type}`;
      const submitterUuid = roleUuid(tagged.role);
      const areas: Area[] = tagged.areas.map((a) => ({ ...a, attachment_uuid: document.uuid }));
      const key = `${tagged.name}\u0000${tagged.type}\u0000${submitterUuid}`;
      const existing = tagged.name ? tagKey.get(key) : undefined;
      if (existing) {
        existing.areas.push(...areas);
        continue;
      }
      const field: Field = {
        uuid: randomUUID(),
        submitter_uuid: submitterUuid,
        name: tagged.name,
        type: tagged.type,
        required: tagged.required,
        ...(tagged.readonly ? { readonly: true } : {}),
        ...(tagged.defaultValue !== undefined ? { default_value: tagged.defaultValue } : {}),
        preferences: tagged.preferences ?? {},
        ...(tagged.options?.length ? { options: tagged.options.map((value) => ({ value, uuid: randomUUID() })) } : {}),
        areas,
      };
      fields.push(field);
      if (tagged.name) tagKey.set(key, field);
    }
  });

  // Conditions are resolved once every field exists: they may name a field given after them.
  const conditional: { field: Field; conditions: z.output<typeof RequestCondition>[]; path: string }[] = [];
  for (const group of input.requestFields) {
    group.fields.forEach((raw, index) => {
      const path = `${group.path}[${index}]`;
      where = path;
      const parsed = parseFieldAt(raw, path);
      if (parsed.uuid !== undefined && fields.some((f) => f.uuid === parsed.uuid)) {
        throw new AppError('VALIDATION', `uuid "${parsed.uuid}" is given to another field too in \`${path}\`.`);
      }
      checkFieldPattern(parsed.validation?.pattern, `${path}.validation.pattern`);
      const type = parsed.type || 'text';
      if (!(FIELD_TYPES as readonly string[]).includes(type)) {
        throw new AppError(
          'VALIDATION',
          `type "${type}" is not supported in \`${path}\`. Use one of: ${FIELD_TYPES.join(', ')}.`,
        );
      }
      if (parsed.options && !OPTION_FIELD_TYPES.has(type)) {
        throw new AppError('VALIDATION', `options are only for select, radio and multiple fields in \`${path}\`.`);
      }
      const options = parsed.options?.map((value) => ({ value, uuid: randomUUID() }));
      const areas = (parsed.areas ?? []).map((area, areaIndex) =>
        toStoredArea(area, input.documents, group.documentIndex, options, `${path}.areas[${areaIndex}]`),
      );
      const field: Field = {
        uuid: parsed.uuid ?? randomUUID(),
        submitter_uuid: roleUuid(parsed.role),
        name: parsed.name,
        type,
        required: parsed.required ?? true,
        ...(parsed.readonly ? { readonly: true } : {}),
        ...(parsed.default_value !== undefined ? { default_value: parsed.default_value } : {}),
        ...(parsed.title !== undefined ? { title: parsed.title } : {}),
        ...(parsed.description !== undefined ? { description: parsed.description } : {}),
        preferences: parsed.preferences ?? {},
        ...(options ? { options } : {}),
        ...(parsed.validation ? { validation: parsed.validation } : {}),
        areas,
      };
      fields.push(field);
      if (parsed.conditions?.length) conditional.push({ field, conditions: parsed.conditions, path });
    });
  }
  for (const { field, conditions, path } of conditional) {
    field.conditions = conditions.map((c, i) => resolveCondition(c, field, fields, `${path}.conditions[${i}]`));
  }

  if (roles.length === 0) roles.push({ name: DEFAULT_ROLE_NAME, uuid: randomUUID() });
  checkTemplateFieldsSize(fields, roles);
  return { roles, fields };
}

/**
 * A template's fields and roles as they will be stored (src/limits.ts): at most MAX_ITEMS.fields
 * fields and MAX_ITEMS.roles roles, and MAX_JSON.templateFields of JSON together (every
 * submission copies them).
 * @throws AppError VALIDATION "fields has too many entries (maximum is 500).", "roles …",
 *   "fields is too large (maximum is 1000000 characters as JSON)."
 */
export function checkTemplateFieldsSize(fields: Field[], roles: Role[]): void {
  checkItems(fields, MAX_ITEMS.fields, 'fields');
  checkItems(roles, MAX_ITEMS.roles, 'roles');
  checkJson(fields, MAX_JSON.templateFields, 'fields');
}

/**
 * A request's condition as the template stores it (DocuSeal's shape): the field it names (by
 * uuid, else by name, case-insensitive), `value` an option's uuid when that field has options.
 * @throws AppError VALIDATION naming the condition (`fields[1].conditions[0]`): no field named,
 *   both ways of naming one, a field the template does not have, a name several fields have, the
 *   field itself, no `value` for an action that compares, a value that is not one of the options,
 *   not a number where numbers are compared, or an action a checkbox does not have
 */
function resolveCondition(
  condition: z.output<typeof RequestCondition>,
  owner: Field,
  fields: Field[],
  path: string,
): FieldCondition {
  const fail = (message: string): never => {
    throw new AppError('VALIDATION', `${message} in \`${path}\`.`);
  };
  if (condition.field_uuid === undefined && condition.field_name === undefined)
    fail('field_uuid (or field_name) is required');
  if (condition.field_uuid !== undefined && condition.field_name !== undefined)
    fail('give field_uuid or field_name, not both');
  let target: Field | undefined;
  if (condition.field_uuid !== undefined) {
    target = fields.find((f) => f.uuid === condition.field_uuid);
    if (!target) fail(`field_uuid "${condition.field_uuid}" is not a field of this template`);
  } else {
    const wanted = condition.field_name!.trim().toLowerCase();
    const named = fields.filter((f) => f.name.trim().toLowerCase() === wanted);
    if (named.length === 0) fail(`field_name "${condition.field_name}" is not a field of this template`);
    if (named.length > 1) fail(`field_name "${condition.field_name}" names ${named.length} fields: use field_uuid`);
    target = named[0];
  }
  const field = target!;
  if (field === owner) fail('a condition cannot name its own field');
  const { action } = condition;
  if (field.type === 'checkbox' && VALUE_ACTIONS.has(action))
    fail(`action ${action} does not apply to a checkbox: use checked or unchecked`);
  let value = condition.value;
  if (VALUE_ACTIONS.has(action)) {
    if (value === undefined || value.trim() === '') fail(`value is required for action ${action}`);
    const numeric = action === 'greater_than' || action === 'less_than' || field.type === 'number';
    if (numeric && Number.isNaN(Number.parseFloat(value!))) fail(`value must be a number for action ${action}`);
    if (field.options && !numeric) {
      const index = field.options.findIndex((o, i) => o.uuid === value || optionValue(o, i) === value);
      if (index < 0) fail(`value "${value}" is not one of the options of field "${field.name}"`);
      value = field.options[index]!.uuid;
    }
  }
  return {
    field_uuid: field.uuid,
    ...(value !== undefined ? { value } : {}),
    action,
    ...(condition.operation ? { operation: condition.operation } : {}),
  };
}

function parseFieldAt(raw: unknown, path: string): z.output<typeof RequestField> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new AppError('VALIDATION', `\`${path}\` must be an object.`);
  }
  return parseInput(RequestField, raw, { at: path });
}

function toStoredArea(
  area: z.output<typeof RequestArea>,
  documents: DocumentLayout[],
  documentIndex: number | undefined,
  options: { value: string; uuid: string }[] | undefined,
  path: string,
): Area {
  let document: DocumentLayout | undefined;
  let page = area.page;
  if (documentIndex !== undefined) {
    document = documents[documentIndex];
  } else {
    // Top-level fields: pages count across the documents in order.
    for (const candidate of documents) {
      if (page <= candidate.pages.length) {
        document = candidate;
        break;
      }
      page -= candidate.pages.length;
    }
    if (!document || page < 1) {
      const total = documents.reduce((sum, d) => sum + d.pages.length, 0);
      throw new AppError('VALIDATION', `page ${area.page} is out of range (1–${total}) in \`${path}\`.`);
    }
  }
  if (!document) throw new AppError('VALIDATION', `\`${path}\` refers to a document that does not exist.`);
  const fractions = pointsToFractions(
    { x: area.x, y: area.y, w: area.w, h: area.h, page },
    document.pages,
    `\`${path}\``,
  );
  let optionUuid: string | undefined;
  if (area.option !== undefined) {
    optionUuid = options?.find((o) => o.value === area.option)?.uuid;
    if (!optionUuid)
      throw new AppError('VALIDATION', `option "${area.option}" is not one of the field's options in \`${path}\`.`);
  }
  return { ...fractions, attachment_uuid: document.uuid, ...(optionUuid ? { option_uuid: optionUuid } : {}) };
}
