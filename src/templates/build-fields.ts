/**
 * Turning field definitions (from a request, from text tags, from HTML field tags) into the
 * template's roles and fields (reference/docuseal-behaviour.md §5.5, §11, §12).
 *
 * Request areas follow the area rule (AREA_RULE below, DESIGN.md "area coordinates",
 * docs/compatibility.md "Field areas"): PDF points with a 1-based page, or fractions of the page
 * with a 0-based page as GET answers them; tag areas arrive already as page fractions.
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
 * The area rule, in one place (DESIGN.md "area coordinates"; docs/compatibility.md "Field areas").
 * An area of a create or update request is read one of two ways:
 * - **points** when any of x, y, w, h is over 1: PDF points (1/72 in) from the top-left corner of
 *   the page as displayed, `page` 1-based (DocuSeal's OpenAPI);
 * - **fractions** when all four are within 0..1: fractions of the page's width and height, y from
 *   the top, `page` 0-based: the format GET /templates/{id} answers, so its fields can be sent back.
 * A field's areas are all one or all the other. The document: `attachment_uuid` names one of the
 * template's documents on an update; on a create (whose documents are new) it names a document of
 * the template the fields were read from and stands for the request's document: `documents[i]` for
 * `documents[i].fields`, the only document for top-level `fields` (several → 422), one such uuid per
 * document. Without `attachment_uuid`, `documents[i].fields` are on document i and top-level fields
 * (and updates) count pages across all documents in order. `cell_w` is in the area's unit.
 * 422 naming the area: a mix of points and fractions in a field, a page out of range, an unknown
 * `attachment_uuid`, a negative x or y, a zero or negative w or h, an area off the page.
 */
export const AREA_RULE =
  'Points (1/72 in) from the top-left of the page as displayed with page 1-based when any of x, y, w, h is ' +
  'over 1; otherwise fractions (0..1) of the page with page 0-based, as GET /templates/{id} answers.';

/**
 * An area of a request's field (GraphQL `FieldAreaInput`), read by AREA_RULE. The one definition:
 * GraphQL's input type is derived from it (src/graphql/zod-input.ts).
 */
export const RequestArea = z
  .object({
    x: z.number({ error: 'x must be a number' }),
    y: z.number({ error: 'y must be a number' }),
    w: z.number({ error: 'w must be a number' }),
    h: z.number({ error: 'h must be a number' }),
    page: z
      .number({ error: 'page must be a number' })
      .int('page must be an integer')
      .meta({ description: '1-based for points, 0-based for fractions.' }),
    attachment_uuid: text(MAX_LENGTH.name)
      .optional()
      .meta({ description: "The document (a template's `documents[].uuid`); `page` is then within it." }),
    option: text(MAX_LENGTH.label)
      .optional()
      .meta({ description: 'For radio and multiple fields: the option this area stands for.' }),
    option_uuid: text(MAX_LENGTH.name)
      .optional()
      .meta({ description: 'Instead of `option`: the uuid of the option (as GET answers it).' }),
    cell_w: z
      .number({ error: 'cell_w must be a number' })
      .optional()
      .meta({ description: 'For cells fields: the width of one cell, in the unit of the area.' }),
  })
  .meta({ description: AREA_RULE });

/** An option of a request's field: its value, or `{value, uuid}` as GET answers it (the uuid is kept). */
const RequestOption = z.union([
  text(MAX_LENGTH.label),
  z.number(),
  z.object({
    value: z.union([text(MAX_LENGTH.label), z.number()]).transform(String),
    uuid: text(MAX_LENGTH.name).trim().min(1, 'an option uuid must not be empty').optional(),
  }),
]);

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
 * A field of a create request (`fields[]`, or `documents[].fields[]`) or of an update (`fields[]`,
 * the template's whole list; GraphQL `TemplateFieldInput`, derived from this definition). Sizes:
 * src/limits.ts; `validation.pattern` is checked by buildFields (field-pattern.ts).
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
  default_value: z
    .union([text(MAX_LENGTH.text), z.number(), z.boolean(), list(text(MAX_LENGTH.label), MAX_ITEMS.options)])
    .optional(),
  title: text(MAX_LENGTH.label).optional(),
  description: text(MAX_LENGTH.text).optional(),
  options: list(RequestOption, MAX_ITEMS.options)
    .optional()
    .meta({ description: 'Option values, or {value, uuid} objects as GET answers them (a given uuid is kept).' }),
  validation: jsonObject(MAX_JSON.preferences).optional(),
  preferences: jsonObject(MAX_JSON.preferences).optional(),
  areas: list(RequestArea, MAX_ITEMS.areas).optional(),
  uuid: text(MAX_LENGTH.name).trim().min(1, 'uuid must not be empty').optional().meta({
    description: "The field's uuid (default: a new random one); kept when given; conditions name fields by it.",
  }),
  submitter_uuid: text(MAX_LENGTH.name)
    .optional()
    .meta({ description: 'Template updates: the role by its uuid, as GET answers it (instead of `role`).' }),
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
 * - Request fields: areas by AREA_RULE (points or fractions; `documents[i].fields` areas are on
 *   document i, top-level `fields` count pages across all documents in order unless an area names its
 *   document). A given field `uuid`, and option `uuid`, is kept. `submitter_uuid` names a role on
 *   updates (`storedDocuments`) only.
 * @throws AppError VALIDATION naming the field (`fields[2]`, `documents[0].fields[1].areas[0]`) for a
 *   missing name, an unknown type, an area the area rule refuses (AREA_RULE), options on a type without
 *   them, an area option that is not one of the field's options, a `uuid` two fields (or two options)
 *   are given, a role or `submitter_uuid` the template lacks (updates), a `validation.pattern` RE2
 *   cannot run (field-pattern.ts), a condition that does not name one other field of the template or
 *   does not fit it (resolveCondition), and a size over src/limits.ts: a string, more than
 *   MAX_ITEMS.fields fields, MAX_ITEMS.conditions conditions or MAX_ITEMS.roles roles, fields larger
 *   than MAX_JSON.templateFields together
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
  /**
   * True when `documents` are the template's stored documents and `existingRoles` its roles (PUT
   * /templates/{id}): `attachment_uuid` and `submitter_uuid` name them.
   */
  storedDocuments?: boolean;
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
  const placement: AreaPlacement = {
    documents: input.documents,
    storedDocuments: input.storedDocuments === true,
    sourceDocuments: new Map(),
  };
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
      const options = parsed.options && storedOptions(parsed.options, `${path}.options`);
      const areas = storedAreas(
        parsed.areas ?? [],
        { ...placement, documentIndex: group.documentIndex },
        options,
        path,
      );
      let submitterUuid: string;
      if (parsed.submitter_uuid !== undefined) {
        if (!placement.storedDocuments) {
          throw new AppError(
            'VALIDATION',
            `submitter_uuid names a role of an existing template: name the role with \`role\` in \`${path}\`.`,
          );
        }
        const role = roles.find((r) => r.uuid === parsed.submitter_uuid);
        if (!role) {
          throw new AppError(
            'VALIDATION',
            `submitter_uuid "${parsed.submitter_uuid}" is not a role of this template ` +
              `(${roles.map((r) => `${r.name}: ${r.uuid}`).join(', ')}) in \`${path}\`.`,
          );
        }
        if (parsed.role !== undefined && parsed.role.toLowerCase() !== role.name.toLowerCase()) {
          throw new AppError(
            'VALIDATION',
            `role "${parsed.role}" and submitter_uuid "${role.uuid}" (${role.name}) name different roles ` +
              `in \`${path}\`.`,
          );
        }
        submitterUuid = role.uuid;
      } else {
        submitterUuid = roleUuid(parsed.role);
      }
      const field: Field = {
        uuid: parsed.uuid ?? randomUUID(),
        submitter_uuid: submitterUuid,
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

/** A field's options as stored: `{value, uuid}`, a given uuid kept. @throws AppError VALIDATION for a uuid twice */
function storedOptions(options: z.output<typeof RequestOption>[], path: string): { value: string; uuid: string }[] {
  const stored = options.map((o) =>
    typeof o === 'object' ? { value: o.value, uuid: o.uuid ?? randomUUID() } : { value: String(o), uuid: randomUUID() },
  );
  stored.forEach((o, i) => {
    if (stored.findIndex((other) => other.uuid === o.uuid) !== i)
      throw new AppError('VALIDATION', `uuid "${o.uuid}" is given to two options in \`${path}\`.`);
  });
  return stored;
}

/** Where a request's areas go (AREA_RULE). */
interface AreaPlacement {
  documents: DocumentLayout[];
  /** `documents[i].fields`: the areas are on document i. */
  documentIndex?: number | undefined;
  /** The documents are the template's stored ones (updates): `attachment_uuid` names one of them. */
  storedDocuments: boolean;
  /** Creates: the document each request document stands for (its index → the `attachment_uuid` given for it). */
  sourceDocuments: Map<number, string>;
}

/** Slack for fractions that sum to a hair over 1 (stored w is 1 − x at most, in floating point). */
const EPSILON_FRACTION = 1e-9;

/** AREA_RULE's unit of an area: points when any of x, y, w, h is over 1, else fractions of the page. */
export function areaUnit(area: { x: number; y: number; w: number; h: number }): 'points' | 'fractions' {
  return area.x > 1 || area.y > 1 || area.w > 1 || area.h > 1 ? 'points' : 'fractions';
}

/**
 * A field's request areas as stored (fractions, page 0-based, attachment_uuid), by AREA_RULE.
 * @throws AppError VALIDATION naming the field or the area (see AREA_RULE)
 */
function storedAreas(
  areas: z.output<typeof RequestArea>[],
  placement: AreaPlacement,
  options: { value: string; uuid: string }[] | undefined,
  path: string,
): Area[] {
  const units = areas.map(areaUnit);
  const mixed = units.findIndex((unit) => unit !== units[0]);
  if (mixed > 0) {
    throw new AppError(
      'VALIDATION',
      `\`${path}\` mixes areas in points (any of x, y, w, h over 1: areas[${units.indexOf('points')}]) and in ` +
        `fractions of the page (areas[${units.indexOf('fractions')}]); give all of a field's areas one way.`,
    );
  }
  return areas.map((area, i) => toStoredArea(area, units[i]!, placement, options, `${path}.areas[${i}]`));
}

function toStoredArea(
  area: z.output<typeof RequestArea>,
  unit: 'points' | 'fractions',
  placement: AreaPlacement,
  options: { value: string; uuid: string }[] | undefined,
  path: string,
): Area {
  const { documents } = placement;
  const first = unit === 'points' ? 1 : 0;
  let document: DocumentLayout | undefined;
  let page = area.page;
  if (area.attachment_uuid !== undefined && placement.storedDocuments) {
    document = documents.find((d) => d.uuid === area.attachment_uuid);
    if (!document) {
      throw new AppError(
        'VALIDATION',
        `attachment_uuid "${area.attachment_uuid}" is not a document of this template ` +
          `(${documents.map((d) => d.uuid).join(', ')}) in \`${path}\`.`,
      );
    }
  } else if (placement.documentIndex !== undefined) {
    document = documents[placement.documentIndex];
  } else if (area.attachment_uuid !== undefined) {
    // A create's top-level field read from another template: its document is this request's only one.
    if (documents.length !== 1) {
      throw new AppError(
        'VALIDATION',
        `attachment_uuid "${area.attachment_uuid}" names a document of another template and this request has ` +
          `${documents.length} documents: give the fields with their document (\`documents[i].fields\`) ` +
          `in \`${path}\`.`,
      );
    }
    document = documents[0];
  } else {
    // Pages count across the documents in order.
    for (const candidate of documents) {
      if (page - first < candidate.pages.length) {
        document = candidate;
        break;
      }
      page -= candidate.pages.length;
    }
    if (!document || page < first) {
      const total = documents.reduce((sum, d) => sum + d.pages.length, 0);
      throw new AppError(
        'VALIDATION',
        `page ${area.page} is out of range (${first}–${total - 1 + first}${
          unit === 'fractions' ? ', 0-based for ' + 'fractions of the page' : ''
        }) in \`${path}\`.`,
      );
    }
  }
  if (!document) throw new AppError('VALIDATION', `\`${path}\` refers to a document that does not exist.`);
  if (area.attachment_uuid !== undefined && !placement.storedDocuments) {
    const index = documents.indexOf(document);
    const known = placement.sourceDocuments.get(index);
    if (known !== undefined && known !== area.attachment_uuid) {
      throw new AppError(
        'VALIDATION',
        `attachment_uuid "${area.attachment_uuid}" and "${known}" both stand for documents[${index}] of this request ` +
          `in \`${path}\`: give each document's fields with it (\`documents[i].fields\`).`,
      );
    }
    placement.sourceDocuments.set(index, area.attachment_uuid);
  }
  const fractions =
    unit === 'points'
      ? pointsToFractions({ x: area.x, y: area.y, w: area.w, h: area.h, page }, document.pages, `\`${path}\``)
      : checkFractions({ x: area.x, y: area.y, w: area.w, h: area.h, page }, document.pages.length, `\`${path}\``);
  let cellW: number | undefined;
  if (area.cell_w !== undefined) {
    cellW = unit === 'points' ? area.cell_w / document.pages[page - 1]!.width : area.cell_w;
    if (!(cellW > 0) || cellW > fractions.w + EPSILON_FRACTION)
      throw new AppError('VALIDATION', `\`${path}\`: cell_w must be greater than 0 and at most w`);
  }
  let optionUuid: string | undefined;
  if (area.option !== undefined) {
    optionUuid = options?.find((o) => o.value === area.option)?.uuid;
    if (!optionUuid)
      throw new AppError('VALIDATION', `option "${area.option}" is not one of the field's options in \`${path}\`.`);
  }
  if (area.option_uuid !== undefined) {
    if (!options?.some((o) => o.uuid === area.option_uuid))
      throw new AppError(
        'VALIDATION',
        `option_uuid "${area.option_uuid}" is not one of the field's options in \`${path}\`.`,
      );
    if (optionUuid !== undefined && optionUuid !== area.option_uuid)
      throw new AppError('VALIDATION', `option and option_uuid name different options in \`${path}\`.`);
    optionUuid = area.option_uuid;
  }
  return {
    ...fractions,
    attachment_uuid: document.uuid,
    ...(optionUuid ? { option_uuid: optionUuid } : {}),
    ...(cellW !== undefined ? { cell_w: cellW } : {}),
  };
}

/**
 * A fractions area (AREA_RULE) checked as stored: page 0-based within the document's `pageCount`
 * pages, x and y not negative, w and h over 0, within the page (what a float sum puts a hair over 1
 * is trimmed, as pointsToFractions does; values within bounds are kept exactly).
 * @throws AppError VALIDATION "`fields[0].areas[0]`: w and h must be greater than 0", …
 */
function checkFractions(
  area: { x: number; y: number; w: number; h: number; page: number },
  pageCount: number,
  label: string,
): { x: number; y: number; w: number; h: number; page: number } {
  if (area.page < 0 || area.page >= pageCount) {
    throw new AppError(
      'VALIDATION',
      `${label}: page ${area.page} is out of range; the document has ${pageCount} page(s), numbered from 0 ` +
        'for fractions of the page',
    );
  }
  if (area.x < 0 || area.y < 0) throw new AppError('VALIDATION', `${label}: x and y must not be negative`);
  if (area.w <= 0 || area.h <= 0) throw new AppError('VALIDATION', `${label}: w and h must be greater than 0`);
  if (area.x + area.w > 1 + EPSILON_FRACTION || area.y + area.h > 1 + EPSILON_FRACTION) {
    throw new AppError(
      'VALIDATION',
      `${label}: the area (x ${area.x}, y ${area.y}, w ${area.w}, h ${area.h} as fractions of the page) ` +
        `does not fit on page ${area.page} (0-based)`,
    );
  }
  return {
    ...area,
    w: area.x + area.w > 1 ? 1 - area.x : area.w,
    h: area.y + area.h > 1 ? 1 - area.y : area.h,
  };
}
