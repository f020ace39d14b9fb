/**
 * A bulk send's data read into rows, and each row's cells mapped to the `submitters` of a create
 * request (issue 16), as DocuSeal's spreadsheet import maps them (app/javascript/template_builder/
 * import_list.vue: per role, its Name, Email, Phone, external_id and its fields' values; its sample
 * spreadsheet names a column "<Role> - <Field>" when the template has several roles).
 *
 * CSV is parsed with `csv-parse` (the CSV project's parser for Node: RFC 4180 quoting, multi-line
 * cells, a byte-order mark, no dependencies, no install scripts), synchronously: the text is
 * bounded first (MAX_BULK_SEND_BYTES) and parsing stops after MAX_ITEMS.bulkSendRows + 1 records,
 * so a request costs at most ~10 MB of parsing (~0.1 s). JSON rows are objects keyed by column.
 *
 * Everything here is about the data's shape and the template's roles and fields; whether a row's
 * submitters can be sent (addresses, values, …) is judged later, row by row, by the create path
 * itself (src/submissions/bulk-send-job.ts), so a rejected row gets POST /submissions' message.
 */
import { CsvError, parse } from 'csv-parse/sync';
import { AppError } from '../errors.ts';
import { MAX_BULK_SEND_BYTES, MAX_ITEMS } from '../limits.ts';
import { matchesField } from '../templates/field-keys.ts';
import type { Field, Role } from '../templates/fields.ts';
import type { BulkSendColumn } from './bulk-send-input.ts';

/** The data as a table: the column names, then each row's cells (strings, numbers, booleans, or absent). */
export interface BulkSendTable {
  columns: string[];
  rows: unknown[][];
}

const tooLarge = (what: string) =>
  new AppError('VALIDATION', `${what} is too large (maximum is ${MAX_BULK_SEND_BYTES} bytes).`, {
    details: { path: what, maximum: MAX_BULK_SEND_BYTES },
  });
const tooManyRows = (what: string) =>
  new AppError('VALIDATION', `${what} has too many rows (maximum is ${MAX_ITEMS.bulkSendRows}).`, {
    details: { path: what, maximum: MAX_ITEMS.bulkSendRows },
  });
const tooManyColumns = (what: string) =>
  new AppError('VALIDATION', `${what} has too many columns (maximum is ${MAX_ITEMS.bulkSendColumns}).`, {
    details: { path: what, maximum: MAX_ITEMS.bulkSendColumns },
  });

/**
 * Reads the request's data: `csv` (its first record the header; blank lines skipped) or `rows`.
 * @throws AppError VALIDATION: neither or both given; over MAX_BULK_SEND_BYTES ("csv is too large
 *   (maximum is 10485760 bytes)."), MAX_ITEMS.bulkSendRows or MAX_ITEMS.bulkSendColumns; no row;
 *   CSV that does not parse ("csv is not valid CSV: Invalid Record Length: … on line 4");
 *   a header named twice; a JSON cell that is an object or a list
 */
export function readBulkSendTable(input: { csv?: string | undefined; rows?: unknown[] | undefined }): BulkSendTable {
  if (input.csv !== undefined && input.rows !== undefined)
    throw new AppError('VALIDATION', 'give csv or rows, not both');
  if (input.csv !== undefined) return readCsv(input.csv);
  if (input.rows !== undefined) return readJsonRows(input.rows);
  throw new AppError('VALIDATION', 'csv or rows is required');
}

function readCsv(text: string): BulkSendTable {
  // Characters first (free), then bytes: a string of more characters than the limit has more bytes.
  if (text.length > MAX_BULK_SEND_BYTES || Buffer.byteLength(text, 'utf8') > MAX_BULK_SEND_BYTES) throw tooLarge('csv');
  let records: string[][];
  try {
    records = parse(text, {
      bom: true,
      skip_empty_lines: true,
      // The header, the most rows accepted, and one more to tell that there are too many.
      to: MAX_ITEMS.bulkSendRows + 2,
    }) as string[][];
  } catch (error) {
    if (error instanceof CsvError) throw new AppError('VALIDATION', `csv is not valid CSV: ${error.message}`);
    throw error;
  }
  const [header, ...rows] = records;
  if (!header) throw new AppError('VALIDATION', 'csv has no rows');
  if (header.length > MAX_ITEMS.bulkSendColumns) throw tooManyColumns('csv');
  if (rows.length > MAX_ITEMS.bulkSendRows) throw tooManyRows('csv');
  if (rows.length === 0) throw new AppError('VALIDATION', 'csv has no rows');
  const columns = header.map((name) => name.trim());
  checkDistinct(columns, 'csv');
  return { columns, rows };
}

function readJsonRows(rows: unknown[]): BulkSendTable {
  if (rows.length > MAX_ITEMS.bulkSendRows) throw tooManyRows('rows');
  if (rows.length === 0) throw new AppError('VALIDATION', 'rows has no rows');
  if ((JSON.stringify(rows)?.length ?? 0) > MAX_BULK_SEND_BYTES) throw tooLarge('rows');
  // The columns: every key, in the order first met.
  const index = new Map<string, number>();
  for (const [i, row] of rows.entries()) {
    if (typeof row !== 'object' || row === null || Array.isArray(row))
      throw new AppError('VALIDATION', `rows[${i}] must be an object`);
    for (const [key, value] of Object.entries(row)) {
      if (value !== null && typeof value === 'object')
        throw new AppError('VALIDATION', `rows[${i}].${key} must be a string, a number or a boolean`);
      if (!index.has(key)) {
        if (index.size >= MAX_ITEMS.bulkSendColumns) throw tooManyColumns('rows');
        index.set(key, index.size);
      }
    }
  }
  const columns = [...index.keys()];
  return {
    columns,
    rows: rows.map((row) => columns.map((column) => (row as Record<string, unknown>)[column])),
  };
}

function checkDistinct(columns: string[], what: string): void {
  const seen = new Set<string>();
  for (const column of columns) {
    const key = column.toLowerCase();
    if (key !== '' && seen.has(key))
      throw new AppError('VALIDATION', `${what} has the column "${column}" twice; map one of them with columns`);
    seen.add(key);
  }
}

/** What a column fills in a row's submitter of role `role`. */
export interface ColumnTarget {
  /** The column's position in the table. */
  index: number;
  role: Role;
  kind: 'email' | 'name' | 'phone' | 'external_id' | 'values' | 'metadata';
  /** The field name or uuid (values), the metadata key (metadata). */
  key?: string;
}

const ATTRIBUTES = ['email', 'name', 'phone', 'external_id'] as const;

/**
 * Where each column goes. With `columns`, exactly those (each named column must exist, its role
 * and field too); without, every named column by its header, as DocuSeal's sample spreadsheet names
 * them: `Email`, `Name`, `Phone`, `external_id` (the first role's), a field's name (its role's),
 * `metadata.<key>` (the first role's), or any of these after "<Role> - " (that role's). Columns
 * with an empty header are left out.
 * @param template the roles and fields of the template (submitters are mapped to roles by name)
 * @throws AppError VALIDATION naming the column that maps nowhere (or twice), the unknown role or field
 */
export function mapColumns(
  table: Pick<BulkSendTable, 'columns'>,
  columns: BulkSendColumn[] | undefined,
  template: { roles: Role[]; fields: Field[] },
): ColumnTarget[] {
  const targets: ColumnTarget[] = [];
  const taken = new Map<string, string>();
  const add = (target: ColumnTarget, label: string) => {
    // A field is the same field by any of its names.
    const which = target.kind === 'values' ? fieldOf(template, target)?.uuid : (target.key ?? '');
    const key = `${target.role.uuid}\0${target.kind}\0${which}`;
    const other = taken.get(key);
    if (other !== undefined)
      throw new AppError(
        'VALIDATION',
        `${label} and column "${other}" both fill ${describe(target)} of role ${target.role.name}`,
      );
    taken.set(key, table.columns[target.index]!);
    targets.push(target);
  };

  if (columns) {
    columns.forEach((mapping, i) => {
      const at = `columns[${i}]`;
      const index = table.columns.findIndex((c) => c.toLowerCase() === mapping.column.trim().toLowerCase());
      if (index < 0) throw new AppError('VALIDATION', `${at}: the data has no column "${mapping.column}"`);
      const role = mapping.role === undefined ? undefined : findRole(template.roles, mapping.role);
      if (mapping.role !== undefined && !role)
        throw new AppError('VALIDATION', `${at}: the template has no role "${mapping.role}"`);
      const target = readTarget(template, index, role, mapping.to.trim(), true);
      if (!target)
        throw new AppError(
          'VALIDATION',
          `${at}: "${mapping.to}" is not email, name, phone, external_id, values.<field> or metadata.<key>`,
        );
      if (typeof target === 'string') throw new AppError('VALIDATION', `${at}: ${target}`);
      add(target, `${at} (column "${mapping.column}")`);
    });
    return targets;
  }

  table.columns.forEach((header, index) => {
    if (header === '') return;
    // "<Role> - <what>": DocuSeal's header for a template with several roles.
    const dash = header.indexOf(' - ');
    const role = dash > 0 ? findRole(template.roles, header.slice(0, dash).trim()) : undefined;
    const what = role ? header.slice(dash + 3).trim() : header;
    const target = readTarget(template, index, role, what, false);
    if (!target || typeof target === 'string')
      throw new AppError(
        'VALIDATION',
        `column "${header}" is not Email, Name, Phone, external_id, metadata.<key> or a field of the template` +
          `${typeof target === 'string' ? ` (${target})` : ''}; name where each column goes with columns`,
      );
    add(target, `column "${header}"`);
  });
  if (targets.length === 0) throw new AppError('VALIDATION', 'no column of the data names where it goes');
  return targets;
}

/**
 * The target `what` names, for role `role` (else the field's role, else the first role); a string
 * says why it cannot be (an unknown field); undefined: `what` names nothing.
 * @param explicit `values.<field>` is required for a field (a `columns` mapping); else a bare field name
 */
function readTarget(
  template: { roles: Role[]; fields: Field[] },
  index: number,
  role: Role | undefined,
  what: string,
  explicit: boolean,
): ColumnTarget | string | undefined {
  const lower = what.toLowerCase();
  const first = template.roles[0]!;
  const attribute = ATTRIBUTES.find((a) => a === lower || a === lower.replace(/\s+/g, '_'));
  if (attribute) return { index, role: role ?? first, kind: attribute };
  if (lower.startsWith('metadata.') && what.length > 'metadata.'.length)
    return { index, role: role ?? first, kind: 'metadata', key: what.slice('metadata.'.length) };
  const field = explicit ? (lower.startsWith('values.') ? what.slice('values.'.length) : undefined) : what;
  if (field === undefined || field === '') return undefined;
  const owner =
    role ??
    template.roles.find((r) => template.fields.some((f) => f.submitter_uuid === r.uuid && matchesField(f, field)));
  const target: ColumnTarget = { index, role: owner ?? first, kind: 'values', key: field };
  if (!owner || !fieldOf(template, target))
    return explicit || role ? `role ${(owner ?? first).name} has no field "${field}"` : undefined;
  return target;
}

/** A field of the target's role that `key` names, as a create request's `values` name it (matchesField). */
function fieldOf(template: { fields: Field[] }, target: ColumnTarget): Field | undefined {
  return template.fields.find((f) => f.submitter_uuid === target.role.uuid && matchesField(f, target.key ?? ''));
}

function findRole(roles: Role[], name: string): Role | undefined {
  return roles.find((r) => r.name.toLowerCase() === name.toLowerCase());
}

function describe(target: ColumnTarget): string {
  if (target.kind === 'values') return `the field "${target.key}"`;
  if (target.kind === 'metadata') return `metadata.${target.key}`;
  return `the ${target.kind}`;
}

/** A row's submitter as a create request gives it (DocuSeal's keys). */
export interface RowSubmitter {
  role: string;
  email?: string;
  name?: string;
  phone?: string;
  external_id?: string;
  values?: Record<string, unknown>;
  metadata?: Record<string, string>;
}

/**
 * One row's submitters: for each role (in the template's order) with a non-empty cell, its email,
 * name, phone and external_id (as text, trimmed), its values (as given: CSV text, JSON numbers and
 * booleans) and metadata (text). An empty cell (blank, null or absent) gives nothing, so a role
 * whose cells are all empty is not in the row, as a POST without that submitter.
 */
export function rowSubmitters(cells: unknown[], targets: ColumnTarget[], roles: Role[]): RowSubmitter[] {
  const byRole = new Map<string, RowSubmitter>();
  for (const target of targets) {
    const cell = cells[target.index];
    if (cell === undefined || cell === null || (typeof cell === 'string' && cell.trim() === '')) continue;
    let submitter = byRole.get(target.role.uuid);
    if (!submitter) byRole.set(target.role.uuid, (submitter = { role: target.role.name }));
    const asText = typeof cell === 'string' ? cell : String(cell);
    if (target.kind === 'values') (submitter.values ??= {})[target.key!] = cell;
    else if (target.kind === 'metadata') (submitter.metadata ??= {})[target.key!] = asText;
    else submitter[target.kind] = asText.trim();
  }
  return roles.flatMap((role) => byRole.get(role.uuid) ?? []);
}
