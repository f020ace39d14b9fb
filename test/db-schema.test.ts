/**
 * Proves the database built by prisma/migrations matches prisma/schema.prisma: tables, columns
 * (type, nullability, default), primary keys, unique and normal indexes (columns in order, names)
 * and foreign keys (columns, target, ON DELETE / ON UPDATE). See test/helpers/schema-diff.ts.
 */
import fs from 'node:fs';
import internals from '@prisma/internals';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { diffSchemas, expectedSchemaFromDmmf, readDatabaseSchema, type SchemaShape } from './helpers/schema-diff.ts';

const SCHEMA_FILE = new URL('../prisma/schema.prisma', import.meta.url);
const schemaText = fs.readFileSync(SCHEMA_FILE, 'utf8');

let db: TestDatabase;
let actual: SchemaShape;

beforeAll(async () => {
  db = await createTestDatabase(); // migrated with src/db/migrate.ts
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    actual = await readDatabaseSchema(client);
  } finally {
    await client.end();
  }
});

afterAll(async () => {
  await db?.drop();
});

async function expectedFrom(datamodel: string): Promise<SchemaShape> {
  return expectedSchemaFromDmmf(await internals.getDMMF({ datamodel }));
}

/** `text` with `from` replaced once; fails if `from` is not there (so a mutation cannot silently miss). */
function replaceOnce(text: string, from: string, to: string): string {
  expect(text.split(from), `"${from}" occurs exactly once in the schema`).toHaveLength(2);
  return text.replace(from, to);
}

describe('database schema', () => {
  it('the migrated database matches prisma/schema.prisma', async () => {
    const expected = await expectedFrom(schemaText);
    // Not vacuous: every model became a table with columns, keys and indexes.
    expect(Object.keys(expected.tables).length).toBeGreaterThan(10);
    expect(Object.keys(actual.tables).sort()).toEqual(Object.keys(expected.tables).sort());

    expect(diffSchemas(expected, actual)).toEqual([]);
  });

  it('reports differences when the schema and the database disagree', async () => {
    let mutated = schemaText;
    // A column made required.
    mutated = replaceOnce(
      mutated,
      'firstName  String?   @map("first_name")',
      'firstName  String    @map("first_name")',
    );
    // A field dropped.
    mutated = replaceOnce(mutated, '  locale      String    @default("en-US")\n', '');
    // An index added, and a unique one changed to a different column order.
    mutated = replaceOnce(
      mutated,
      '  @@index([accountId])\n  @@map("users")',
      '  @@index([accountId])\n  @@index([lastName])\n  @@map("users")',
    );
    mutated = replaceOnce(mutated, '@@unique([fileId, page])', '@@unique([page, fileId])');
    // A type, a default and a referential action changed.
    mutated = replaceOnce(mutated, 'byteSize    BigInt   @map("byte_size")', 'byteSize    Int      @map("byte_size")');
    mutated = replaceOnce(
      mutated,
      'timezone    String    @default("UTC")',
      'timezone    String    @default("Europe/Berlin")',
    );
    mutated = replaceOnce(
      mutated,
      'file     StoredFile @relation(fields: [fileId], references: [id], onDelete: Restrict)\n\n  ' +
        '@@index([templateId, position])',
      'file     StoredFile @relation(fields: [fileId], references: [id], onDelete: Cascade)\n\n  ' +
        '@@index([templateId, position])',
    );

    const diffs = diffSchemas(await expectedFrom(mutated), actual);
    expect(diffs).toEqual([
      'column accounts.locale: in the database, not in the schema',
      "column accounts.timezone: default 'Europe/Berlin'::text in the schema, 'UTC'::text in the database",
      'column stored_files.byte_size: type integer in the schema, bigint in the database',
      'column users.first_name: NOT NULL in the schema, nullable in the database',
      'foreign key template_documents(file_id) → stored_files(id): ' +
        'ON DELETE CASCADE in the schema, RESTRICT in the database',
      'index users(last_name): in the schema, missing in the database',
      'unique index document_previews(file_id, page) ' +
        '(document_previews_file_id_page_key): in the database, not in the schema',
      'unique index document_previews(page, file_id): in the schema, missing in the database',
    ]);
  });
});
