/**
 * A field's `conditions` (issue 15): show a field, and require it, only while other fields' values
 * say so. The one rule, shared by the server (template validation in build-fields.ts, the checks
 * and the value drop at completion in src/signing-form/field-values.ts and
 * src/submissions/create-submissions.ts, drawing in src/signing/draw-values.ts, the audit log) and
 * the signing page (src/signing-form/page/main.ts bundles this file): plain TypeScript, no import.
 *
 * Shape (DocuSeal's field JSON, `app/controllers/api/templates_controller.rb` permits it):
 * `conditions: [{field_uuid, value, action, operation}]`; `value` is an option's uuid when the
 * field named is a select, radio or multiple field, else the text compared.
 *
 * The rule is DocuSeal's (`lib/submitters/submit_values.rb` check_field_conditions and
 * check_field_condition; `app/javascript/submission_form/form.vue` checkFieldConditions):
 * - the conditions are folded in order: `operation: "or"` ORs a condition's result with the
 *   previous one, anything else ANDs it; the field is shown when no result is false;
 * - `empty`/`unchecked`: the value is blank (null, blank text, empty list, false);
 *   `not_empty`/`checked`: it is not;
 * - on a `number` field, `equal`/`not_equal`/`greater_than`/`less_than` compare numbers (false when
 *   either side is blank or not a number); `greater_than`/`less_than` on other fields compare the
 *   values read as numbers as Ruby's `to_f` does (the server's rule; DocuSeal's page says true);
 * - `equal`/`contains`: on an option field, the value (or one of a multiple field's values) is the
 *   option `value` names (an option without a value is "Option N", 1-based); otherwise the value
 *   (or one of a list's) is `value`, exactly; `not_equal`/`does_not_contain`: on an option field,
 *   that option is not chosen; on other fields false. A condition naming no field of the submission
 *   is true for these four (as DocuSeal's), and an action DocuSeal does not know is true.
 * - A value falls back to the field's `default_value` (DocuSeal's page) when none is given.
 * - A hidden field has no value: a condition on it sees it blank. DocuSeal's server gets there by
 *   deleting hidden values in field order, its page by making `not_empty`/`equal`/… false on a
 *   hidden field; here it holds in any order. A field whose conditions lead back to itself is
 *   judged on its values alone where the loop closes (DocuSeal's page would not finish).
 * Cost: each field is judged once per evaluation (memoised): O(fields + conditions).
 */

/** The actions DocuSeal knows (submit_values.rb check_field_condition). */
export const CONDITION_ACTIONS = [
  'empty',
  'not_empty',
  'checked',
  'unchecked',
  'equal',
  'not_equal',
  'contains',
  'does_not_contain',
  'greater_than',
  'less_than',
] as const;
export type ConditionAction = (typeof CONDITION_ACTIONS)[number];

/** Actions that compare with `value` (the others look at the value alone). */
export const VALUE_ACTIONS: ReadonlySet<string> = new Set([
  'equal',
  'not_equal',
  'contains',
  'does_not_contain',
  'greater_than',
  'less_than',
]);

/** `and` (the default) or `or` with the previous condition. */
export const CONDITION_OPERATIONS = ['and', 'or'] as const;

/** A stored condition (DocuSeal's keys). */
export interface FieldCondition {
  field_uuid: string;
  value?: string | number | boolean | null | undefined;
  action: string;
  operation?: string | undefined;
}

/** What the rule reads of a field (DocuSeal's field JSON keys; the page maps its view to this). */
export interface ConditionalField {
  uuid: string;
  type: string;
  options?: readonly { value: string; uuid: string }[] | null | undefined;
  default_value?: unknown;
  conditions?: readonly FieldCondition[] | null | undefined;
}

/** DocuSeal's blank (Ruby `blank?`, the page's isEmpty): null, blank text, an empty list or object, false. */
export function isBlank(value: unknown): boolean {
  if (value === null || value === undefined || value === false) return true;
  if (typeof value === 'string') return value.trim() === '';
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.keys(value).length === 0;
  return false;
}

/** Folds the results of conditions in order: `or` with the previous result, otherwise `and`. */
export function foldConditions(
  conditions: readonly FieldCondition[],
  check: (condition: FieldCondition) => boolean,
): boolean {
  const results: boolean[] = [];
  for (const condition of conditions) {
    if (condition.operation === 'or' && results.length > 0) results.push(results.pop()! || check(condition));
    else results.push(check(condition));
  }
  return !results.includes(false);
}

/** How an evaluation judges: `judged(condition, field)` false takes that condition of that field as met. */
export interface ConditionOptions {
  judged?: (condition: FieldCondition, field: ConditionalField) => boolean;
}

/** What an evaluation over one set of values answers. */
export interface ConditionEvaluator {
  /** Whether the field with this uuid is shown (true for a field the evaluator does not know). */
  isShown(uuid: string): boolean;
  /** One condition's result. */
  check(condition: FieldCondition): boolean;
}

/**
 * Judges fields' conditions over values.
 * @param fields every field of the submission (or template) conditions may name
 * @param values field uuid → value (DocuSeal §11 shapes): all parties' values, the party's own last
 */
export function evaluateConditions(
  fields: readonly ConditionalField[],
  values: Readonly<Record<string, unknown>>,
  options: ConditionOptions = {},
): ConditionEvaluator {
  const judged = options.judged ?? (() => true);
  const byUuid = new Map<string, ConditionalField>();
  for (const field of fields) if (!byUuid.has(field.uuid)) byUuid.set(field.uuid, field);
  const shown = new Map<string, boolean>();
  const judging = new Set<string>();

  const isShown = (uuid: string): boolean => {
    const known = shown.get(uuid);
    if (known !== undefined) return known;
    const field = byUuid.get(uuid);
    if (!field?.conditions?.length) return true;
    // A loop back to a field being judged: judged on its values alone there.
    if (judging.has(uuid)) return true;
    judging.add(uuid);
    const result = foldConditions(field.conditions, (c) => !judged(c, field) || check(c));
    judging.delete(uuid);
    shown.set(uuid, result);
    return result;
  };

  const valueOfField = (field: ConditionalField | undefined, uuid: string): unknown => {
    if (field && !judging.has(uuid) && !isShown(uuid)) return null;
    const value = values[uuid];
    if (value !== undefined && value !== null) return value;
    return field && !isBlank(field.default_value) ? field.default_value : null;
  };

  const check = (condition: FieldCondition): boolean => {
    const field = byUuid.get(condition.field_uuid);
    const value = valueOfField(field, condition.field_uuid);
    const expected = condition.value;
    switch (condition.action) {
      case 'empty':
      case 'unchecked':
        return isBlank(value);
      case 'not_empty':
      case 'checked':
        return !isBlank(value);
      case 'greater_than':
      case 'less_than': {
        if (!field || isBlank(value) || isBlank(expected)) return false;
        const [actual, wanted] =
          field.type === 'number'
            ? [Number.parseFloat(String(value)), Number.parseFloat(String(expected))]
            : [toF(value), toF(expected)];
        if (Number.isNaN(actual) || Number.isNaN(wanted)) return false;
        return condition.action === 'greater_than' ? actual > wanted : actual < wanted;
      }
      case 'equal':
      case 'contains':
      case 'not_equal':
      case 'does_not_contain': {
        if (!field) return true;
        const positive = condition.action === 'equal' || condition.action === 'contains';
        if (field.type === 'number' && (condition.action === 'equal' || condition.action === 'not_equal')) {
          if (isBlank(value) || isBlank(expected)) return false;
          const actual = Number.parseFloat(String(value));
          const wanted = Number.parseFloat(String(expected));
          if (Number.isNaN(actual) || Number.isNaN(wanted)) return false;
          const same = Math.abs(actual - wanted) < Number.EPSILON;
          return positive ? same : !same;
        }
        const given = (Array.isArray(value) ? value : [value]) as unknown[];
        if (!field.options) return positive ? given.includes(expected) : false;
        const index = field.options.findIndex((o) => o.uuid === expected);
        if (index < 0) return false;
        const chosen = given.includes(optionValue(field.options[index]!, index));
        return positive ? chosen : !chosen;
      }
      default:
        return true;
    }
  };

  return { isShown, check };
}

/**
 * The uuids of the fields whose conditions are not met (evaluateConditions), in field order.
 * @param fields every field conditions may name; @param values as for evaluateConditions
 */
export function hiddenFieldUuids(
  fields: readonly ConditionalField[],
  values: Readonly<Record<string, unknown>>,
  options: ConditionOptions = {},
): Set<string> {
  const evaluator = evaluateConditions(fields, values, options);
  const hidden = new Set<string>();
  for (const field of fields) if (field.conditions?.length && !evaluator.isShown(field.uuid)) hidden.add(field.uuid);
  return hidden;
}

/**
 * The fields of one party hidden by that party's own values alone: conditions naming another
 * party's field (or a field not given) are taken as met. Used where a party's stored values are
 * shown after its completion (its documents, the audit log): completion judged the other parties'
 * values then and kept or dropped the value accordingly, and a later change of theirs must not
 * change what was agreed; the party's own values no longer change, so this only repeats its
 * completion's judgement (and holds for values stored without it).
 * @param fields the party's fields (others are ignored by role); @param values the party's values
 */
export function hiddenByOwnValues(
  fields: readonly (ConditionalField & { submitter_uuid: string })[],
  values: Readonly<Record<string, unknown>>,
): Set<string> {
  const roleOf = new Map(fields.map((f) => [f.uuid, f.submitter_uuid]));
  return hiddenFieldUuids(fields, values, {
    judged: (condition, field) => roleOf.get(condition.field_uuid) === roleOf.get(field.uuid),
  });
}

/** An option as values hold it: its value, or "Option N" (1-based) when it has none (DocuSeal §11). */
export function optionValue(option: { value: string }, index: number): string {
  return option.value ? option.value : `Option ${index + 1}`;
}

/** Ruby's String#to_f: the leading decimal number of the text, else 0. */
function toF(value: unknown): number {
  if (typeof value === 'number') return value;
  const match = /^\s*[+-]?(\d[\d_]*)?(\.\d+)?([eE][+-]?\d+)?/.exec(String(value));
  const number = Number.parseFloat((match?.[0] ?? '').replace(/_/g, ''));
  return Number.isNaN(number) ? 0 : number;
}

/**
 * A party's values without those of its fields whose conditions are not met (DocuSeal's
 * maybe_remove_condition_values, lib/submitters/submit_values.rb; the rule: hiddenFieldUuids
 * above), judged over the other parties' values with this party's on top.
 * @param fields the submission's fields (every role: conditions may name another party's field)
 * @param values this party's values by field uuid; `otherValues` the other parties' values merged
 * @returns a new object; `values` is not changed
 */
export function dropHiddenValues(
  fields: readonly (ConditionalField & { submitter_uuid: string })[],
  roleUuid: string,
  values: Record<string, unknown>,
  otherValues: Record<string, unknown> = {},
): Record<string, unknown> {
  const kept = { ...values };
  for (const uuid of hiddenOwnFields(fields, roleUuid, values, otherValues)) delete kept[uuid];
  return kept;
}

/** The uuids of this party's fields whose conditions are not met (as dropHiddenValues judges them). */
export function hiddenOwnFields(
  fields: readonly (ConditionalField & { submitter_uuid: string })[],
  roleUuid: string,
  values: Record<string, unknown>,
  otherValues: Record<string, unknown>,
): Set<string> {
  const hidden = hiddenFieldUuids(fields, { ...otherValues, ...values });
  for (const field of fields) if (field.submitter_uuid !== roleUuid) hidden.delete(field.uuid);
  return hidden;
}

/** The values of every party of a submission but one, merged in id order (DocuSeal's merge_submitters_values). */
export function otherPartiesValues(
  submitters: readonly { id: number; values: unknown }[],
  exceptId: number,
): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const party of submitters)
    if (party.id !== exceptId) Object.assign(merged, (party.values ?? {}) as Record<string, unknown>);
  return merged;
}
