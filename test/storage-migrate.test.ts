/**
 * `signet storage migrate --to s3|local` (issue 18): the files the stored_files rows name are
 * copied from DATA_DIR/files to S3 (a real S3 protocol server on loopback) under the same keys,
 * then back into an empty directory; counts printed as one JSON line; a second run copies nothing;
 * a run after a partial copy copies only what is missing; rows whose bytes are gone are counted,
 * not fatal; damaged bytes are not copied.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../src/accounts/create-account.ts';
import { loadConfig } from '../src/config.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { createS3Storage } from '../src/documents/s3-storage.ts';
import { createLocalStorage, storageKeyFor } from '../src/documents/storage.ts';
import { recordStoredFile, storeFile } from '../src/documents/store-file.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { runSignet } from './helpers/processes.ts';
import { startS3Server, type TestS3Server } from './helpers/s3-server.ts';

let s3: TestS3Server;
let database: TestDatabase;
let db: Db;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-storage-migrate-'));
const dataDir = path.join(tmp, 'data');
const files = new Map<string, Buffer>();
let missingKey: string;

beforeAll(async () => {
  s3 = await startS3Server();
  database = await createTestDatabase();
  db = createDb(database.url);
  const { accountId } = await createAccount(db, { name: 'Migrating', email: 'owner@migrate.test' });
  const local = createLocalStorage(path.join(dataDir, 'files'));
  for (let i = 0; i < 12; i += 1) {
    const bytes = randomBytes(1000 + i * 5000);
    const row = await storeFile(
      { db, storage: local },
      { accountId, bytes, filename: `f${i}.bin`, contentType: 'x/y' },
    );
    files.set(row.storageKey, bytes);
  }
  // The same bytes twice: two rows, one key.
  const again = files.values().next().value!;
  await storeFile({ db, storage: local }, { accountId, bytes: again, filename: 'again.bin', contentType: 'x/y' });
  // A named file (a completion output).
  const named = Buffer.from('%PDF-1.7 audit log of run 1');
  const put = await local.putNamed('completions/abc/audit-log.pdf', () => named);
  await recordStoredFile({ db, storage: local }, put, {
    accountId,
    filename: 'audit.pdf',
    contentType: 'application/pdf',
  });
  files.set(put.key, named);
  // A row whose bytes are gone.
  missingKey = storageKeyFor('cd'.repeat(32));
  await db.storedFile.create({
    data: {
      accountId,
      filename: 'lost.pdf',
      contentType: 'application/pdf',
      byteSize: 10n,
      sha256: 'cd'.repeat(32),
      storageKey: missingKey,
    },
  });
});
afterAll(async () => {
  await db?.$disconnect();
  await database?.drop();
  await s3?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const migrate = async (to: string, dir = dataDir) => {
  const result = await runSignet(['storage', 'migrate', '--to', to], {
    DATABASE_URL: database.url,
    DATA_DIR: dir,
    LOG_LEVEL: 'warn',
    ...s3.env({ prefix: 'migrated' }),
  });
  expect(result.code, result.stderr).toBe(0);
  const lines = result.stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!);
};

const totalBytes = () => [...files.values()].reduce((sum, bytes) => sum + bytes.byteLength, 0);

describe('signet storage migrate', () => {
  it('--to s3 copies every file the rows name under its key, once; a second run copies nothing', async () => {
    const first = await migrate('s3');
    expect(first).toEqual({
      from: 'local',
      to: 's3',
      files: files.size + 1,
      copied: files.size,
      skipped: 0,
      missing: 1,
      damaged: 0,
      bytes: totalBytes(),
      missingKeys: [missingKey],
    });
    expect(await s3.objectKeys()).toEqual([...files.keys()].map((key) => `migrated/${key}`).sort());
    const storage = createS3Storage(loadConfig(s3.env({ prefix: 'migrated' })).storage!);
    for (const [key, bytes] of files) expect((await storage.read(key)).equals(bytes), key).toBe(true);

    expect(await migrate('s3')).toMatchObject({ copied: 0, skipped: files.size, missing: 1, bytes: 0 });

    // Resumes: what a stopped run had not copied yet is copied, nothing else.
    const [firstKey, secondKey] = [...files.keys()];
    await storage.delete(firstKey!);
    await storage.delete(secondKey!);
    expect(await migrate('s3')).toMatchObject({
      copied: 2,
      skipped: files.size - 2,
      bytes: files.get(firstKey!)!.byteLength + files.get(secondKey!)!.byteLength,
    });
    storage.close();
  });

  it('--to local copies them back into an empty directory; damaged bytes are not copied', async () => {
    const back = path.join(tmp, 'back');
    expect(await migrate('local', back)).toMatchObject({
      from: 's3',
      to: 'local',
      copied: files.size,
      missing: 1,
      damaged: 0,
    });
    const local = createLocalStorage(path.join(back, 'files'));
    for (const [key, bytes] of files) expect((await local.read(key)).equals(bytes), key).toBe(true);
    expect(await migrate('local', back)).toMatchObject({ copied: 0, skipped: files.size });

    // Bytes that no longer match their key (damaged in the source) stay out of the target.
    const [damagedKey] = [...files.keys()];
    fs.writeFileSync(path.join(back, 'files', damagedKey!), 'not the bytes of this key');
    const storage = createS3Storage(loadConfig(s3.env({ prefix: 'migrated' })).storage!);
    await storage.delete(damagedKey!);
    expect(await migrate('s3', back)).toMatchObject({ copied: 0, damaged: 1, skipped: files.size - 1 });
    expect(await storage.exists(damagedKey!)).toBe(false);
    storage.close();
  });

  it('refuses an unknown direction and runs only with STORAGE_URL', async () => {
    const wrong = await runSignet(['storage', 'migrate', '--to', 'tape'], {
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      ...s3.env(),
    });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--to must be s3 or local, got "tape"');
    const noStorage = await runSignet(['storage', 'migrate', '--to', 's3'], {
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
    });
    expect(noStorage.code).toBe(2);
    expect(noStorage.stderr).toContain('storage migrate needs STORAGE_URL=s3://bucket/prefix');
  });
});
