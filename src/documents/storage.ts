/**
 * Where file bytes live. Content-addressed: a file's key is derived from the SHA-256 of its
 * bytes, so the same bytes are stored once however many StoredFile rows point at them (rows
 * carry the filename, type and owner; the bytes carry none of that).
 *
 * Beside them, files under a name the caller chooses (putNamed, keys `named/…`), first write wins:
 * for outputs that differ from run to run (a signature's time, an audit log's "generated at") of
 * which exactly one is wanted. A run repeated after a crash finds the first run's file under the
 * same name and keeps it, where a content-addressed put would leave the first file behind with no
 * row pointing at it (the completion steps, src/signing/complete-submission.ts).
 *
 * Bytes no StoredFile row uses any more are removed with delete(), by the `delete-unused-files` job
 * (src/documents/unused-files.ts removeUnusedBytes, which checks under a lock that no row uses them),
 * and by storeFile through the same function when the row of bytes it just put was not written.
 *
 * Two implementations: local disk under `<DATA_DIR>/files` (the default, createLocalStorage) and
 * S3-compatible object storage with `STORAGE_URL=s3://bucket/prefix` (src/documents/s3-storage.ts);
 * openFileStorage picks one from the configuration. Both use the same keys, so `signet storage
 * migrate` (src/documents/migrate-storage.ts) copies files from one to the other unchanged.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';

export interface PutResult {
  /** Storage key, `sha256/<aa>/<bb>/<hex>`. */
  key: string;
  /** Lower-case hex SHA-256 of the bytes. */
  sha256: string;
  /** Bytes. */
  byteSize: number;
}

export interface FileStorage {
  /** Stores the bytes (once: a second put of the same bytes writes nothing) and returns their key. */
  put(bytes: Uint8Array): Promise<PutResult>;
  /**
   * Stores the bytes `make` returns under `named/<name>`, unless a file is there already: then
   * `make` is not called (or, when another writer got there first meanwhile, its bytes are
   * dropped) and the file that is there is described. First write wins, so every caller gets the
   * same file. `name`: 1–4 segments of letters, digits, `_` and `-` joined by `/`, the last with an
   * optional `.ext` (e.g. `completions/<slug>/audit-log.pdf`); anything else is refused (Error).
   */
  putNamed(name: string, make: () => Promise<Uint8Array> | Uint8Array): Promise<PutResult>;
  /** The whole file. Rejects with MissingFileError for an unknown key. */
  read(key: string): Promise<Buffer>;
  /**
   * The file, or the bytes `start`..`end` of it (both inclusive, 0-based, as in HTTP Range).
   * An unknown key makes the stream emit an error whose `code` is 'ENOENT' (MissingFileError, or
   * the file system's own error).
   */
  stream(key: string, range?: { start: number; end: number }): NodeJS.ReadableStream;
  /** Size in bytes. Rejects with MissingFileError for an unknown key. */
  size(key: string): Promise<number>;
  exists(key: string): Promise<boolean>;
  /**
   * Removes the file under `key` (a content-addressed or a named key). A key with no file is no
   * error (a repeated delete does nothing). Only removeUnusedBytes calls it (the `delete-unused-files`
   * job, and storeFile), once no StoredFile row uses the key (src/documents/unused-files.ts):
   * content-addressed bytes are shared.
   * @throws MissingFileError for a key this storage does not make; the file system's errors
   */
  delete(key: string): Promise<void>;
  /**
   * S3 storage only (src/documents/s3-storage.ts): a URL at which the storage itself serves the
   * file for `expiresInSeconds` (at most 7 days, SigV4's limit), answering with the headers given
   * (S3's response-content-type, -content-disposition and -cache-control overrides). Signing is
   * local: no request is made.
   */
  presignedUrl?(key: string, options: PresignedUrlOptions): Promise<string>;
  /** Closes connections the storage keeps (S3's client); nothing to close on local disk. */
  close?(): void;
}

/** The response headers and lifetime of a presigned URL (FileStorage.presignedUrl). */
export interface PresignedUrlOptions {
  expiresInSeconds: number;
  contentType: string;
  contentDisposition: string;
  cacheControl: string;
}

/** The key names no stored file (or is not a key this storage makes). */
export class MissingFileError extends Error {
  override name = 'MissingFileError';
  readonly code = 'ENOENT';
  constructor(readonly key: string) {
    super(`No stored file under key ${JSON.stringify(key)}`);
  }
}

const KEY_PATTERN = /^sha256\/([0-9a-f]{2})\/([0-9a-f]{2})\/([0-9a-f]{64})$/;
/** Keys of putNamed: no segment can be `.` or `..`, so a key never names a path outside the root. */
const NAMED_KEY_PATTERN = /^named\/(?:[A-Za-z0-9_-]{1,100}\/){0,3}[A-Za-z0-9_-]{1,100}(?:\.[a-z0-9]{1,10})?$/;

/**
 * Whether `key` is one this storage makes: `sha256/<aa>/<bb>/<hex>` (the prefixes matching the
 * hex) or `named/…` of putNamed. Every implementation refuses other keys (MissingFileError), so a
 * key can never name a path outside the root (local) or outside the prefix (S3).
 */
export function isStorageKey(key: string): boolean {
  if (NAMED_KEY_PATTERN.test(key)) return true;
  const match = KEY_PATTERN.exec(key);
  return match !== null && match[3].slice(0, 2) === match[1] && match[3].slice(2, 4) === match[2];
}

/** Whether `name` is one putNamed takes (its key is `named/<name>`). */
export function isStorageName(name: string): boolean {
  return NAMED_KEY_PATTERN.test(`named/${name}`);
}

/** The storage key for a lower-case hex SHA-256: `sha256/<first 2>/<next 2>/<hex>`. */
export function storageKeyFor(sha256: string): string {
  return `sha256/${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}`;
}

/**
 * Local-disk storage under `root` (the service uses `<DATA_DIR>/files`; nothing is created until
 * the first put). Writes go to a temporary file in the target directory, are fsynced, then
 * renamed over the final name, so a reader (or another instance sharing the directory) never sees
 * a partly written file, and concurrent puts of the same bytes are harmless.
 * Keys that do not have the `sha256/aa/bb/<hex>` shape are refused (MissingFileError), so a key can
 * never name a path outside `root`.
 */
export function createLocalStorage(root: string): FileStorage {
  const resolvedRoot = path.resolve(root);

  const pathOf = (key: string): string => {
    if (!isStorageKey(key)) throw new MissingFileError(key);
    return path.join(resolvedRoot, key);
  };

  const statOf = async (key: string) => {
    try {
      return await fs.stat(pathOf(key));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || error instanceof MissingFileError)
        throw new MissingFileError(key);
      throw error;
    }
  };

  return {
    async put(bytes) {
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const key = storageKeyFor(sha256);
      const target = pathOf(key);
      const existing = await fs.stat(target).catch(() => null);
      // Same name means same bytes; a size mismatch can only be damage from outside, so rewrite.
      if (existing?.isFile() && existing.size === bytes.byteLength) return { key, sha256, byteSize: bytes.byteLength };

      await fs.mkdir(path.dirname(target), { recursive: true });
      const temporary = path.join(
        path.dirname(target),
        `.${sha256}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
      );
      const handle = await fs.open(temporary, 'wx', 0o644);
      try {
        try {
          await handle.writeFile(bytes);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await fs.rename(temporary, target);
      } catch (error) {
        await fs.rm(temporary, { force: true });
        throw error;
      }
      return { key, sha256, byteSize: bytes.byteLength };
    },

    async putNamed(name, make) {
      const key = `named/${name}`;
      if (!isStorageName(name)) throw new Error(`Not a name putNamed takes: ${JSON.stringify(name)}`);
      const target = pathOf(key);
      const describe = (bytes: Uint8Array): PutResult => ({
        key,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        byteSize: bytes.byteLength,
      });
      const existing = await fs.readFile(target).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return null;
        throw error;
      });
      if (existing) return describe(existing);

      const bytes = await make();
      await fs.mkdir(path.dirname(target), { recursive: true });
      const temporary = path.join(
        path.dirname(target),
        `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`,
      );
      try {
        const handle = await fs.open(temporary, 'wx', 0o644);
        try {
          await handle.writeFile(bytes);
          await handle.sync();
        } finally {
          await handle.close();
        }
        // link() fails with EEXIST where rename() would replace: the first complete file stays.
        await fs.link(temporary, target);
        return describe(bytes);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        return describe(await fs.readFile(target));
      } finally {
        await fs.rm(temporary, { force: true });
      }
    },

    async read(key) {
      try {
        return await fs.readFile(pathOf(key));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT' || error instanceof MissingFileError)
          throw new MissingFileError(key);
        throw error;
      }
    },

    stream(key, range) {
      let file: string;
      try {
        file = pathOf(key);
      } catch (error) {
        const refused = new Readable({ read() {} });
        process.nextTick(() => refused.destroy(error as Error));
        return refused;
      }
      return createReadStream(file, range ? { start: range.start, end: range.end } : {});
    },

    async size(key) {
      return (await statOf(key)).size;
    },

    async exists(key) {
      try {
        return (await statOf(key)).isFile();
      } catch (error) {
        if (error instanceof MissingFileError) return false;
        throw error;
      }
    },

    async delete(key) {
      // pathOf refuses keys of another shape, so nothing outside the root is removed. Emptied
      // directories stay: a later put of bytes with the same prefix uses them again.
      await fs.rm(pathOf(key), { force: true });
    },
  };
}
