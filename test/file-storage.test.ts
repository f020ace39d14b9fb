/** Local content-addressed and named storage, storeFile rows, and the generated secret key base. */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { resolveSecretKeyBase, SECRET_KEY_BASE_FILE } from '../src/documents/secret-key.ts';
import { createLocalStorage, MissingFileError } from '../src/documents/storage.ts';
import { storeFile } from '../src/documents/store-file.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-files-'));
  tempDirs.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => fs.rm(dir, { recursive: true, force: true })));
});

async function listFiles(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

async function streamToBuffer(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

describe('createLocalStorage', () => {
  it('stores bytes under sha256/<aa>/<bb>/<hex> and reads them back', async () => {
    const root = await tempDir();
    const storage = createLocalStorage(root);
    const bytes = randomBytes(5000);
    const hex = createHash('sha256').update(bytes).digest('hex');

    const put = await storage.put(bytes);

    expect(put).toEqual({ key: `sha256/${hex.slice(0, 2)}/${hex.slice(2, 4)}/${hex}`, sha256: hex, byteSize: 5000 });
    expect(await fs.readFile(path.join(root, put.key))).toEqual(bytes);
    expect(await storage.read(put.key)).toEqual(bytes);
    expect(await storage.size(put.key)).toBe(5000);
    expect(await storage.exists(put.key)).toBe(true);
    expect(await streamToBuffer(storage.stream(put.key))).toEqual(bytes);
    expect(await streamToBuffer(storage.stream(put.key, { start: 10, end: 19 }))).toEqual(bytes.subarray(10, 20));
    expect(await listFiles(root)).toEqual([put.key]);
  });

  it('writes nothing on a second put of the same bytes', async () => {
    const root = await tempDir();
    const storage = createLocalStorage(root);
    const bytes = Buffer.from('same bytes twice');
    const first = await storage.put(bytes);
    const file = path.join(root, first.key);
    const past = new Date('2020-01-01T00:00:00Z');
    await fs.utimes(file, past, past);
    const before = await fs.stat(file);

    const second = await storage.put(Uint8Array.from(bytes));

    expect(second).toEqual(first);
    const after = await fs.stat(file);
    expect(after.ino).toBe(before.ino);
    expect(after.mtimeMs).toBe(past.getTime());
    expect(await listFiles(root)).toEqual([first.key]);
  });

  it('rewrites a file whose size does not match (damaged from outside)', async () => {
    const root = await tempDir();
    const storage = createLocalStorage(root);
    const bytes = randomBytes(100);
    const { key } = await storage.put(bytes);
    await fs.writeFile(path.join(root, key), bytes.subarray(0, 50));

    await storage.put(bytes);

    expect(await storage.read(key)).toEqual(bytes);
  });

  it('never shows a partly written file under its key, and leaves no temporary files', async () => {
    const root = await tempDir();
    const storage = createLocalStorage(root);
    // Node writes large buffers in chunks, so a plain writeFile to the final name would be seen growing.
    const bytes = randomBytes(32 * 1024 * 1024);
    const hex = createHash('sha256').update(bytes).digest('hex');
    const file = path.join(root, 'sha256', hex.slice(0, 2), hex.slice(2, 4), hex);
    const seen = new Set<number>();
    let done = false;
    const watcher = (async () => {
      while (!done) {
        const stat = await fs.stat(file).catch(() => null);
        if (stat) seen.add(stat.size);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();

    const put = await storage.put(bytes);
    done = true;
    await watcher;

    expect([...seen].every((size) => size === bytes.length)).toBe(true);
    expect(await listFiles(root)).toEqual([put.key]);
  });

  it('lets concurrent puts of the same bytes all succeed with one file', async () => {
    const root = await tempDir();
    const storage = createLocalStorage(root);
    const bytes = randomBytes(256 * 1024);

    const results = await Promise.all(Array.from({ length: 8 }, () => storage.put(bytes)));

    expect(new Set(results.map((r) => r.key)).size).toBe(1);
    expect(await listFiles(root)).toEqual([results[0].key]);
    expect(await storage.read(results[0].key)).toEqual(bytes);
  });

  it('reports unknown keys, and refuses keys that are not its own shape (no path escape)', async () => {
    const root = await tempDir();
    const storage = createLocalStorage(path.join(root, 'files'));
    await fs.writeFile(path.join(root, 'secret.txt'), 'outside');
    const unknown = `sha256/00/11/${'0011'.padEnd(64, 'a')}`;

    for (const key of [unknown, '../secret.txt', 'sha256/../../secret.txt', `sha256/ab/cd/${'0'.repeat(64)}`]) {
      expect(await storage.exists(key)).toBe(false);
      await expect(storage.size(key)).rejects.toBeInstanceOf(MissingFileError);
      await expect(storage.read(key)).rejects.toBeInstanceOf(MissingFileError);
      await expect(streamToBuffer(storage.stream(key))).rejects.toMatchObject({ code: 'ENOENT' });
    }
  });

  it('putNamed: the first file stored under a name stays; later callers get it without making theirs', async () => {
    const root = await tempDir();
    const storage = createLocalStorage(root);
    const first = randomBytes(3000);
    const hex = createHash('sha256').update(first).digest('hex');
    const name = 'completions/Ab3_x-9/audit-log.pdf';

    const put = await storage.putNamed(name, async () => first);
    expect(put).toEqual({ key: `named/${name}`, sha256: hex, byteSize: 3000 });
    expect(await storage.read(put.key)).toEqual(first);
    // A repeated run (other bytes: another signing time) is given the first file; `make` never runs.
    let made = 0;
    const again = await storage.putNamed(name, () => {
      made += 1;
      return randomBytes(3000);
    });
    expect(made).toBe(0);
    expect(again).toEqual(put);
    // Two writers at once, both making their bytes: both get the one file that won, no temporary file stays.
    const other = 'completions/Ab3_x-9/documents-1-0.pdf';
    const results = await Promise.all(
      [randomBytes(2000), randomBytes(2000)].map((bytes) => storage.putNamed(other, async () => bytes)),
    );
    expect(results[1]).toEqual(results[0]);
    expect(
      createHash('sha256')
        .update(await storage.read(results[0].key))
        .digest('hex'),
    ).toBe(results[0].sha256);
    expect((await listFiles(root)).sort()).toEqual([`named/${name}`, `named/${other}`]);
  });

  it('putNamed refuses names that are not its shape (no path escape), and makes nothing for them', async () => {
    const storage = createLocalStorage(await tempDir());
    for (const name of ['../x.pdf', 'a/../../x.pdf', '', 'a//b', '.hidden', 'a/b/c/d/e.pdf', 'a b.pdf', '/abs.pdf']) {
      await expect(storage.putNamed(name, () => Buffer.from('x'))).rejects.toThrow(/Not a name putNamed takes/);
    }
  });

  it(
    'delete removes a content-addressed or named file, does nothing for a missing one, ' + 'refuses other keys',
    async () => {
      const root = await tempDir();
      const storage = createLocalStorage(root);
      const kept = await storage.put(Buffer.from('kept'));
      const gone = await storage.put(Buffer.from('gone'));
      const named = await storage.putNamed('completions/abc/audit-log.pdf', () => Buffer.from('named'));
      await storage.delete(gone.key);
      await storage.delete(named.key);
      expect(await storage.exists(gone.key)).toBe(false);
      expect(await storage.exists(named.key)).toBe(false);
      await expect(storage.read(gone.key)).rejects.toBeInstanceOf(MissingFileError);
      expect(await listFiles(root)).toEqual([kept.key.split('/').join(path.sep)]);
      // Again: nothing there, no error. A put brings the bytes back.
      await storage.delete(gone.key);
      await storage.put(Buffer.from('gone'));
      expect((await storage.read(gone.key)).toString()).toBe('gone');
      for (const key of ['../outside', 'sha256/aa/bb/../../../x', `sha256/00/00/${gone.sha256}`, '/etc/passwd']) {
        await expect(storage.delete(key)).rejects.toBeInstanceOf(MissingFileError);
      }
      expect((await listFiles(root)).sort()).toEqual(
        [gone.key, kept.key].map((k) => k.split('/').join(path.sep)).sort(),
      );
    },
  );
});

describe('storeFile', () => {
  let database: TestDatabase;
  let db: Db;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDb(database.url);
  });
  afterAll(async () => {
    await db?.$disconnect();
    await database?.drop();
  });

  it('puts the bytes and creates a StoredFile row describing them', async () => {
    const storage = createLocalStorage(await tempDir());
    const { accountId } = await createAccount(db, { name: 'Files', email: 'files@example.test' });
    const bytes = Buffer.from('%PDF-1.7 fake');
    const pages = [{ width: 612, height: 792, rotate: 0 }];

    const row = await storeFile(
      { db, storage },
      {
        accountId,
        bytes,
        filename: 'contract.pdf',
        contentType: 'application/pdf',
        pageCount: 1,
        pages,
        metadata: { source: 'test' },
      },
    );

    const hex = createHash('sha256').update(bytes).digest('hex');
    expect(row).toMatchObject({
      accountId,
      filename: 'contract.pdf',
      contentType: 'application/pdf',
      byteSize: BigInt(bytes.length),
      sha256: hex,
      storageKey: `sha256/${hex.slice(0, 2)}/${hex.slice(2, 4)}/${hex}`,
      pageCount: 1,
      pages,
      metadata: { source: 'test' },
    });
    expect(row.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await db.storedFile.findUniqueOrThrow({ where: { id: row.id } })).toEqual(row);
    expect(await storage.read(row.storageKey)).toEqual(bytes);
  });

  it(
    'defaults: no account, no pages, empty metadata; ' + 'the same bytes twice make two rows over one stored file',
    async () => {
      const root = await tempDir();
      const storage = createLocalStorage(root);
      const bytes = Buffer.from('image bytes');

      const a = await storeFile(
        { db, storage },
        { accountId: null, bytes, filename: '0.png', contentType: 'image/png' },
      );
      const b = await storeFile(
        { db, storage },
        { accountId: null, bytes, filename: 'copy.png', contentType: 'image/png' },
      );

      expect(a).toMatchObject({ accountId: null, pageCount: null, pages: null, metadata: {} });
      expect(b.uuid).not.toBe(a.uuid);
      expect(b.storageKey).toBe(a.storageKey);
      expect(await listFiles(root)).toEqual([a.storageKey]);
    },
  );

  it('takes a transaction client: the row goes when the transaction rolls back', async () => {
    const storage = createLocalStorage(await tempDir());
    let uuid = '';
    await expect(
      db.$transaction(async (tx) => {
        const row = await storeFile(
          { db: tx, storage },
          { accountId: null, bytes: Buffer.from('tx'), filename: 'tx.txt', contentType: 'text/plain' },
        );
        uuid = row.uuid;
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(uuid).not.toBe('');
    expect(await db.storedFile.findUnique({ where: { uuid } })).toBeNull();
  });
});

describe('resolveSecretKeyBase', () => {
  it('returns SECRET_KEY_BASE when configured, without touching DATA_DIR', async () => {
    const dataDir = await tempDir();
    const secret = 'x'.repeat(40);
    expect(await resolveSecretKeyBase({ secretKeyBase: secret, dataDir })).toBe(secret);
    expect(await fs.readdir(dataDir)).toEqual([]);
  });

  it('creates <DATA_DIR>/secret_key_base once (128 hex characters, mode 0600) and reuses it', async () => {
    const dataDir = path.join(await tempDir(), 'not-yet-there');
    const first = await resolveSecretKeyBase({ secretKeyBase: undefined, dataDir });
    const file = path.join(dataDir, SECRET_KEY_BASE_FILE);

    expect(first).toMatch(/^[0-9a-f]{128}$/);
    expect((await fs.stat(file)).mode & 0o777).toBe(0o600);
    expect((await fs.readFile(file, 'utf8')).trim()).toBe(first);
    expect(await resolveSecretKeyBase({ secretKeyBase: undefined, dataDir })).toBe(first);
    expect(await fs.readdir(dataDir)).toEqual([SECRET_KEY_BASE_FILE]);
  });

  it('gives every concurrent caller the same secret', async () => {
    const dataDir = await tempDir();
    const secrets = await Promise.all(
      Array.from({ length: 10 }, () => resolveSecretKeyBase({ secretKeyBase: undefined, dataDir })),
    );
    expect(new Set(secrets).size).toBe(1);
    expect(await fs.readdir(dataDir)).toEqual([SECRET_KEY_BASE_FILE]);
  });

  it('refuses a file that holds no usable secret instead of replacing it', async () => {
    const dataDir = await tempDir();
    await fs.writeFile(path.join(dataDir, SECRET_KEY_BASE_FILE), 'short\n');
    await expect(resolveSecretKeyBase({ secretKeyBase: undefined, dataDir })).rejects.toThrow(/no usable secret/);
    expect(await fs.readFile(path.join(dataDir, SECRET_KEY_BASE_FILE), 'utf8')).toBe('short\n');
  });
});
