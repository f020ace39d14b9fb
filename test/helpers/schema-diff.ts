/**
 * Compares the database Prisma expects (from the DMMF of prisma/schema.prisma) with the live
 * PostgreSQL catalog, and lists every difference as a readable line.
 *
 * Both sides are first reduced to one {@link SchemaShape}: tables → columns (type as
 * `format_type()` prints it, nullability, default as `pg_get_expr()` prints it), indexes
 * (primary / unique / normal, key columns in order, access method, name) and foreign keys
 * (columns, referenced table and columns, ON DELETE / ON UPDATE), plus enum types.
 *
 * Expected names follow Prisma's naming convention (psl ConstraintNames: `{table}_pkey`,
 * `{table}_{columns}_key|_idx|_fkey`, truncated to 63 bytes the way Prisma truncates, which is not
 * the way PostgreSQL truncates), or the `map:` name where the DMMF carries one (indexes). The DMMF
 * carries neither a relation's `map:` nor its `onUpdate`, so foreign keys are expected under the
 * conventional name with ON UPDATE CASCADE (Prisma's default); the schema uses neither.
 */
import type pg from 'pg';

export interface ColumnShape {
  /** As `format_type()` prints it: `text`, `timestamp(3) without time zone`, `text[]`, ... */
  type: string;
  nullable: boolean;
  /** As `pg_get_expr()` prints it; null for none; {@link ANY_DEFAULT} when only presence is known. */
  default: string | null;
}

export interface IndexShape {
  kind: 'primary' | 'unique' | 'normal';
  name: string;
  /** Key columns in index order, `column DESC` for descending ones. */
  columns: string[];
  /** btree, hash, gin, ... */
  method: string;
  /** What Prisma cannot express (partial, expression, INCLUDE); empty when nothing. */
  extra: string[];
}

export interface ForeignKeyShape {
  name: string;
  columns: string[];
  referencedTable: string;
  referencedColumns: string[];
  /** CASCADE, RESTRICT, NO ACTION, SET NULL, SET DEFAULT */
  onDelete: string;
  onUpdate: string;
}

export interface TableShape {
  columns: Record<string, ColumnShape>;
  indexes: IndexShape[];
  foreignKeys: ForeignKeyShape[];
}

export interface SchemaShape {
  tables: Record<string, TableShape>;
  /** Enum type name → labels in order. */
  enums: Record<string, string[]>;
}

/** "Some default": the schema says there is one but not in a form we render (dbgenerated(), floats, dates). */
export const ANY_DEFAULT = '(any default)';

/** Tables that are not part of the schema: Prisma Migrate's bookkeeping. */
const IGNORED_TABLES = new Set(['_prisma_migrations']);

const POSTGRES_IDENTIFIER_LIMIT = 63;

// The parts of Prisma's DMMF (`getDMMF()` of @prisma/internals) used here.
export interface DmmfField {
  readonly name: string;
  readonly dbName?: string | null;
  readonly kind: string;
  readonly type: string;
  readonly nativeType?: readonly [string, readonly string[]] | null;
  readonly isList: boolean;
  readonly isRequired: boolean;
  readonly hasDefaultValue: boolean;
  readonly default?: unknown;
  readonly relationFromFields?: readonly string[];
  readonly relationToFields?: readonly string[];
  readonly relationOnDelete?: string;
}
export interface DmmfModel {
  readonly name: string;
  readonly dbName: string | null;
  readonly fields: readonly DmmfField[];
}
export interface DmmfIndex {
  readonly model: string;
  readonly type: string;
  readonly dbName?: string | null;
  readonly algorithm?: string | null;
  readonly fields: readonly { readonly name: string; readonly sortOrder?: string | null }[];
}
export interface DmmfEnum {
  readonly name: string;
  readonly dbName?: string | null;
  readonly values: readonly { readonly name: string; readonly dbName?: string | null }[];
}
export interface DmmfLike {
  readonly datamodel: {
    readonly models: readonly DmmfModel[];
    readonly enums: readonly DmmfEnum[];
    readonly indexes: readonly DmmfIndex[];
  };
}

// ---------------------------------------------------------------------------------------------
// Expected: from the DMMF

/**
 * The database Prisma expects for a datamodel.
 * @throws Error for a type, native type or index type this helper does not know (so that a
 *   schema change it cannot check fails loudly instead of passing silently).
 */
export function expectedSchemaFromDmmf(dmmf: DmmfLike): SchemaShape {
  const { models, enums, indexes } = dmmf.datamodel;
  const modelByName = new Map(models.map((model) => [model.name, model]));
  const enumByName = new Map(enums.map((enumType) => [enumType.name, enumType]));
  const tableOf = (model: DmmfModel) => model.dbName ?? model.name;
  const columnOf = (field: DmmfField) => field.dbName ?? field.name;
  const fieldOf = (model: DmmfModel, name: string) => {
    const field = model.fields.find((candidate) => candidate.name === name);
    if (!field) throw new Error(`DMMF: ${model.name} has no field ${name}`);
    return field;
  };

  const shape: SchemaShape = { tables: {}, enums: {} };
  for (const enumType of enums) {
    shape.enums[enumType.dbName ?? enumType.name] = enumType.values.map((value) => value.dbName ?? value.name);
  }

  for (const model of models) {
    const table = tableOf(model);
    const tableShape: TableShape = { columns: {}, indexes: [], foreignKeys: [] };
    shape.tables[table] = tableShape;

    for (const field of model.fields) {
      if (field.kind === 'object') continue;
      const column = columnOf(field);
      const type = expectedType(field, enumByName);
      tableShape.columns[column] = {
        type,
        // Required scalars and (required) lists are NOT NULL; the schema cannot declare optional lists.
        nullable: !field.isRequired,
        default: expectedDefault(field, table, column, type),
      };
    }

    for (const index of indexes.filter((candidate) => candidate.model === model.name)) {
      const columns = index.fields.map((indexField) => columnOf(fieldOf(model, indexField.name)));
      const kind =
        index.type === 'id'
          ? 'primary'
          : index.type === 'unique'
            ? 'unique'
            : index.type === 'normal'
              ? 'normal'
              : null;
      if (!kind) throw new Error(`schema-diff: index type ${index.type} on ${model.name} is not supported`);
      const name =
        index.dbName ??
        (kind === 'primary'
          ? truncatedName(table, '_pkey')
          : truncatedName(`${table}_${columns.join('_')}`, kind === 'unique' ? '_key' : '_idx'));
      tableShape.indexes.push({
        kind,
        name,
        columns: index.fields.map((indexField, i) => columns[i] + (indexField.sortOrder === 'desc' ? ' DESC' : '')),
        method: (index.algorithm ?? 'BTree').toLowerCase(),
        extra: [],
      });
    }

    for (const field of model.fields) {
      if (field.kind !== 'object' || !field.relationFromFields?.length) continue;
      const target = modelByName.get(field.type);
      if (!target) throw new Error(`DMMF: ${model.name}.${field.name} refers to unknown model ${field.type}`);
      const fromFields = field.relationFromFields.map((name) => fieldOf(model, name));
      const columns = fromFields.map(columnOf);
      // Prisma's defaults: Restrict when a scalar of the relation is required, else SetNull.
      const onDelete = field.relationOnDelete ?? (fromFields.some((f) => f.isRequired) ? 'Restrict' : 'SetNull');
      tableShape.foreignKeys.push({
        name: truncatedName(`${table}_${columns.join('_')}`, '_fkey'),
        columns,
        referencedTable: tableOf(target),
        referencedColumns: (field.relationToFields ?? []).map((name) => columnOf(fieldOf(target, name))),
        onDelete: referentialAction(onDelete),
        onUpdate: 'CASCADE',
      });
    }
  }
  return shape;
}

/** Prisma's constraint-name truncation (psl ConstraintNames): cut the stem so stem + suffix fits 63 bytes. */
function truncatedName(stem: string, suffix: string): string {
  const limit = POSTGRES_IDENTIFIER_LIMIT - suffix.length;
  let cut = stem;
  if (Buffer.byteLength(stem) >= limit) {
    cut = Buffer.from(stem)
      .subarray(0, limit)
      .toString('utf8')
      .replace(/\uFFFD+$/, '');
  }
  return cut + suffix;
}

function referentialAction(action: string): string {
  const actions: Record<string, string> = {
    Cascade: 'CASCADE',
    Restrict: 'RESTRICT',
    NoAction: 'NO ACTION',
    SetNull: 'SET NULL',
    SetDefault: 'SET DEFAULT',
  };
  const sql = actions[action];
  if (!sql) throw new Error(`schema-diff: referential action ${action} is not supported`);
  return sql;
}

/** The column type Prisma creates for a field, as `format_type()` prints it. */
function expectedType(field: DmmfField, enumByName: Map<string, DmmfEnum>): string {
  let base: string;
  if (field.kind === 'enum') {
    const enumType = enumByName.get(field.type);
    base = quoteIdentifier(enumType?.dbName ?? field.type);
  } else if (field.kind === 'scalar') {
    base = field.nativeType ? nativeType(field.nativeType[0], field.nativeType[1]) : scalarType(field.type);
  } else {
    throw new Error(`schema-diff: field kind ${field.kind} (${field.name}) is not supported`);
  }
  return field.isList ? `${base}[]` : base;
}

function scalarType(type: string): string {
  const types: Record<string, string> = {
    String: 'text',
    Int: 'integer',
    BigInt: 'bigint',
    Float: 'double precision',
    Decimal: 'numeric(65,30)',
    Boolean: 'boolean',
    DateTime: 'timestamp(3) without time zone',
    Json: 'jsonb',
    Bytes: 'bytea',
  };
  const sql = types[type];
  if (!sql) throw new Error(`schema-diff: scalar type ${type} is not supported`);
  return sql;
}

function nativeType(name: string, args: readonly string[]): string {
  const precision = args.length ? `(${args.join(',')})` : '';
  switch (name) {
    case 'Uuid':
      return 'uuid';
    case 'Text':
      return 'text';
    case 'VarChar':
      return `character varying${precision}`;
    case 'Char':
      return `character${precision || '(1)'}`;
    case 'Citext':
      return 'citext';
    case 'Inet':
      return 'inet';
    case 'Xml':
      return 'xml';
    case 'SmallInt':
      return 'smallint';
    case 'Integer':
      return 'integer';
    case 'BigInt':
      return 'bigint';
    case 'Oid':
      return 'oid';
    case 'Real':
      return 'real';
    case 'DoublePrecision':
      return 'double precision';
    case 'Decimal':
      return `numeric${precision}`;
    case 'Money':
      return 'money';
    case 'Boolean':
      return 'boolean';
    case 'Timestamp':
      return `timestamp${precision || '(3)'} without time zone`;
    case 'Timestamptz':
      return `timestamp${precision || '(3)'} with time zone`;
    case 'Date':
      return 'date';
    case 'Time':
      return `time${precision || '(3)'} without time zone`;
    case 'Timetz':
      return `time${precision || '(3)'} with time zone`;
    case 'Json':
      return 'json';
    case 'JsonB':
      return 'jsonb';
    case 'ByteA':
      return 'bytea';
    default:
      throw new Error(`schema-diff: native type @db.${name} is not supported`);
  }
}

/**
 * The default Prisma creates, as `pg_get_expr()` prints it; null where Prisma creates none
 * (no @default, @updatedAt, and the client-side uuid()/cuid()/nanoid()/ulid()).
 */
function expectedDefault(field: DmmfField, table: string, column: string, type: string): string | null {
  if (!field.hasDefaultValue) return null;
  const value = field.default;
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && 'name' in value) {
    const call = value as { name: string; args: readonly unknown[] };
    switch (call.name) {
      case 'autoincrement': {
        // SERIAL / BIGSERIAL: a sequence named {table}_{column}_seq.
        const sequence = `${table}_${column}_seq`;
        return sequence.length <= POSTGRES_IDENTIFIER_LIMIT
          ? `nextval('${quoteIdentifier(sequence).replaceAll("'", "''")}'::regclass)`
          : ANY_DEFAULT;
      }
      case 'now':
        return 'CURRENT_TIMESTAMP';
      case 'dbgenerated':
        return typeof call.args[0] === 'string' ? call.args[0] : ANY_DEFAULT;
      case 'uuid':
      case 'cuid':
      case 'nanoid':
      case 'ulid':
        return null;
      default:
        return ANY_DEFAULT;
    }
  }
  const castType = type.replace(/\(\d+(,\d+)?\)/, '');
  if (Array.isArray(value)) {
    if (value.length === 0) return `ARRAY[]::${castType}`;
    if (value.every((item) => typeof item === 'string') && field.kind === 'scalar') {
      const element = castType.slice(0, -2);
      return `ARRAY[${value.map((item) => `${quoteLiteral(item)}::${element}`).join(', ')}]`;
    }
    return ANY_DEFAULT;
  }
  if (field.kind === 'enum' && typeof value === 'string') return `${quoteLiteral(value)}::${castType}`;
  switch (field.type) {
    case 'String':
    case 'Json':
      return typeof value === 'string' ? `${quoteLiteral(value)}::${castType}` : ANY_DEFAULT;
    case 'Boolean':
      return String(value);
    case 'Int':
      // ruleutils prints non-negative int4 constants bare, negative ones quoted with a cast.
      return Number(value) >= 0 ? String(value) : `'${String(value)}'::integer`;
    case 'BigInt': {
      // `DEFAULT 0` on a bigint column is an int4 constant under an implicit cast, printed as the
      // int4 itself; only constants outside int4 are bigint constants ('…'::bigint).
      const n = BigInt(String(value));
      return n >= 0n && n <= 2147483647n ? String(n) : `'${String(value)}'::bigint`;
    }
    default:
      return ANY_DEFAULT;
  }
}

function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** As PostgreSQL's quote_ident: bare when lower-case simple, double-quoted otherwise. */
function quoteIdentifier(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}

// ---------------------------------------------------------------------------------------------
// Actual: from the catalog

/** The current schema (`current_schema()`) of the database `client` is connected to. */
export async function readDatabaseSchema(client: pg.Client): Promise<SchemaShape> {
  const shape: SchemaShape = { tables: {}, enums: {} };

  const tables = await client.query<{ table: string }>(
    `SELECT c.relname AS "table" FROM pg_class c
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')`,
  );
  for (const { table } of tables.rows) {
    if (!IGNORED_TABLES.has(table)) shape.tables[table] = { columns: {}, indexes: [], foreignKeys: [] };
  }

  const columns = await client.query<{
    table: string;
    column: string;
    type: string;
    not_null: boolean;
    default: string | null;
    identity: string;
    generated: string;
  }>(
    `SELECT c.relname AS "table", a.attname AS "column", format_type(a.atttypid, a.atttypmod) AS type,
            a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS "default",
            a.attidentity AS identity, a.attgenerated AS generated
       FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
        AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY c.relname, a.attnum`,
  );
  for (const row of columns.rows) {
    const table = shape.tables[row.table];
    if (!table) continue;
    let defaultExpression = row.default;
    if (row.identity) defaultExpression = `GENERATED ${row.identity === 'a' ? 'ALWAYS' : 'BY DEFAULT'} AS IDENTITY`;
    if (row.generated) defaultExpression = `GENERATED ALWAYS AS (${row.default}) STORED`;
    table.columns[row.column] = { type: row.type, nullable: !row.not_null, default: defaultExpression };
  }

  const indexes = await client.query<{
    table: string;
    name: string;
    primary: boolean;
    unique: boolean;
    method: string;
    columns: string[];
    partial: string | null;
    expressions: boolean;
    included: number;
  }>(
    `SELECT t.relname AS "table", i.relname AS name, x.indisprimary AS "primary", x.indisunique AS "unique",
            am.amname AS method,
            ARRAY(
              SELECT a.attname::text || CASE WHEN x.indoption[k.n - 1] & 1 = 1 THEN ' DESC' ELSE '' END
                FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
                JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
               WHERE k.n <= x.indnkeyatts
               ORDER BY k.n
            ) AS columns,
            pg_get_expr(x.indpred, x.indrelid) AS partial,
            x.indexprs IS NOT NULL AS expressions,
            x.indnatts - x.indnkeyatts AS included
       FROM pg_index x
       JOIN pg_class t ON t.oid = x.indrelid
       JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_am am ON am.oid = i.relam
      WHERE t.relnamespace = current_schema()::regnamespace
      ORDER BY t.relname, i.relname`,
  );
  for (const row of indexes.rows) {
    const table = shape.tables[row.table];
    if (!table) continue;
    const extra: string[] = [];
    if (row.partial) extra.push(`partial (WHERE ${row.partial})`);
    if (row.expressions) extra.push('on expressions');
    if (row.included > 0) extra.push(`with ${row.included} INCLUDE column(s)`);
    table.indexes.push({
      kind: row.primary ? 'primary' : row.unique ? 'unique' : 'normal',
      name: row.name,
      columns: row.columns,
      method: row.method,
      extra,
    });
  }

  const foreignKeys = await client.query<{
    table: string;
    name: string;
    columns: string[];
    referenced_table: string;
    referenced_columns: string[];
    on_delete: string;
    on_update: string;
  }>(
    `SELECT t.relname AS "table", con.conname AS name,
            ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, n)
                    JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.n) AS columns,
            r.relname AS referenced_table,
            ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, n)
                    JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.n)
              AS referenced_columns,
            con.confdeltype AS on_delete, con.confupdtype AS on_update
       FROM pg_constraint con
       JOIN pg_class t ON t.oid = con.conrelid
       JOIN pg_class r ON r.oid = con.confrelid
      WHERE con.contype = 'f' AND t.relnamespace = current_schema()::regnamespace
      ORDER BY t.relname, con.conname`,
  );
  const actions: Record<string, string> = {
    a: 'NO ACTION',
    r: 'RESTRICT',
    c: 'CASCADE',
    n: 'SET NULL',
    d: 'SET DEFAULT',
  };
  for (const row of foreignKeys.rows) {
    const table = shape.tables[row.table];
    if (!table) continue;
    table.foreignKeys.push({
      name: row.name,
      columns: row.columns,
      referencedTable: row.referenced_table,
      referencedColumns: row.referenced_columns,
      onDelete: actions[row.on_delete] ?? row.on_delete,
      onUpdate: actions[row.on_update] ?? row.on_update,
    });
  }

  const enums = await client.query<{ name: string; labels: string[] }>(
    `SELECT t.typname::text AS name, ARRAY(SELECT e.enumlabel::text FROM pg_enum e
                                     WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder) AS labels
       FROM pg_type t
      WHERE t.typtype = 'e' AND t.typnamespace = current_schema()::regnamespace`,
  );
  for (const row of enums.rows) shape.enums[row.name] = row.labels;

  return shape;
}

// ---------------------------------------------------------------------------------------------
// Diff

/** Every difference between `expected` (the schema) and `actual` (the database), one line each, sorted. */
export function diffSchemas(expected: SchemaShape, actual: SchemaShape): string[] {
  const diffs: string[] = [];

  for (const name of union(Object.keys(expected.enums), Object.keys(actual.enums))) {
    const want = expected.enums[name];
    const have = actual.enums[name];
    if (!have) diffs.push(`enum ${name}: in the schema, missing in the database`);
    else if (!want) diffs.push(`enum ${name}: in the database, not in the schema`);
    else if (want.join(',') !== have.join(','))
      diffs.push(`enum ${name}: values (${want.join(', ')}) in the schema, (${have.join(', ')}) in the database`);
  }

  for (const tableName of union(Object.keys(expected.tables), Object.keys(actual.tables))) {
    const want = expected.tables[tableName];
    const have = actual.tables[tableName];
    if (!have) {
      diffs.push(`table ${tableName}: in the schema, missing in the database`);
      continue;
    }
    if (!want) {
      diffs.push(`table ${tableName}: in the database, not in the schema`);
      continue;
    }
    diffColumns(tableName, want, have, diffs);
    diffIndexes(tableName, want, have, diffs);
    diffForeignKeys(tableName, want, have, diffs);
  }
  return diffs.sort();
}

function diffColumns(table: string, want: TableShape, have: TableShape, diffs: string[]): void {
  for (const name of union(Object.keys(want.columns), Object.keys(have.columns))) {
    const column = `column ${table}.${name}`;
    const w = want.columns[name];
    const h = have.columns[name];
    if (!h) {
      diffs.push(`${column}: in the schema, missing in the database`);
      continue;
    }
    if (!w) {
      diffs.push(`${column}: in the database, not in the schema`);
      continue;
    }
    if (w.type !== h.type) diffs.push(`${column}: type ${w.type} in the schema, ${h.type} in the database`);
    if (w.nullable !== h.nullable) {
      diffs.push(
        `${column}: ${w.nullable ? 'nullable' : 'NOT NULL'} in the schema, ` +
          `${h.nullable ? 'nullable' : 'NOT NULL'} in the database`,
      );
    }
    const defaultsAgree = w.default === ANY_DEFAULT ? h.default !== null : w.default === h.default;
    if (!defaultsAgree) {
      diffs.push(`${column}: default ${w.default ?? 'none'} in the schema, ${h.default ?? 'none'} in the database`);
    }
  }
}

function indexLabel(table: string, index: IndexShape): string {
  const kind = { primary: 'primary key', unique: 'unique index', normal: 'index' }[index.kind];
  const method = index.method === 'btree' ? '' : ` using ${index.method}`;
  return `${kind} ${table}(${index.columns.join(', ')})${method}`;
}

function diffIndexes(table: string, want: TableShape, have: TableShape, diffs: string[]): void {
  const unmatched = [...have.indexes];
  for (const w of want.indexes) {
    const label = indexLabel(table, w);
    const at = unmatched.findIndex((h) => indexLabel(table, h) === label && h.extra.length === 0);
    if (at === -1) {
      diffs.push(`${label}: in the schema, missing in the database`);
      continue;
    }
    const [h] = unmatched.splice(at, 1);
    if (h.name !== w.name) diffs.push(`${label}: named ${h.name} in the database, Prisma names it ${w.name}`);
  }
  for (const h of unmatched) {
    const extra = h.extra.length ? `, ${h.extra.join(', ')}` : '';
    diffs.push(`${indexLabel(table, h)} (${h.name}${extra}): in the database, not in the schema`);
  }
}

function foreignKeyLabel(table: string, key: ForeignKeyShape): string {
  return (
    `foreign key ${table}(${key.columns.join(', ')}) → ${key.referencedTable}(` + `${key.referencedColumns.join(', ')})`
  );
}

function diffForeignKeys(table: string, want: TableShape, have: TableShape, diffs: string[]): void {
  const unmatched = [...have.foreignKeys];
  for (const w of want.foreignKeys) {
    const label = foreignKeyLabel(table, w);
    const at = unmatched.findIndex((h) => foreignKeyLabel(table, h) === label);
    if (at === -1) {
      diffs.push(`${label}: in the schema, missing in the database`);
      continue;
    }
    const [h] = unmatched.splice(at, 1);
    if (h.onDelete !== w.onDelete)
      diffs.push(`${label}: ON DELETE ${w.onDelete} in the schema, ${h.onDelete} in the database`);
    if (h.onUpdate !== w.onUpdate)
      diffs.push(`${label}: ON UPDATE ${w.onUpdate} in the schema, ${h.onUpdate} in the database`);
    if (h.name !== w.name) diffs.push(`${label}: named ${h.name} in the database, Prisma names it ${w.name}`);
  }
  for (const h of unmatched) diffs.push(`${foreignKeyLabel(table, h)} (${h.name}): in the database, not in the schema`);
}

function union(a: string[], b: string[]): string[] {
  return [...new Set([...a, ...b])].sort();
}
