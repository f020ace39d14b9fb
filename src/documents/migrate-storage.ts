/**
 * `signet storage migrate --to s3|local`: copies the stored files from the local directory
 * (`<DATA_DIR>/files`) to S3-compatible storage (STORAGE_URL), or back (docs/deploy.md, "From one
 * process to two replicas on S3"). Both storages use the same keys (storage.ts), so a file is
 * copied under its own key and the stored_files rows stay as they are: after the copy, the service
 * started with (or without) STORAGE_URL finds every file.
 *
 * The files copied are those the stored_files rows name (each key once): bytes no row uses are
 * left behind. Idempotent and resumable: a key already in the target is skipped (a stopped run is
 * simply run again), content-addressed bytes are checked against their key (SHA-256) before they
 * are written, and named files go through putNamed (first write wins), so a copy never replaces a
 * file the target already has. Nothing is deleted from the source: remove it once the service runs
 * on the target.
 */
import { createHash } from 'node:crypto';
import type { Db } from '../db/client.ts';
import { type FileStorage, MissingFileError, storageKeyFor } from './storage.ts';

/** What a migration did, as the CLI prints it. */
export interface StorageMigrationResult {
  from: 'local' | 's3';
  to: 'local' | 's3';
  /** Distinct storage keys the rows name. */
  files: number;
  /** Copied now. */
  copied: number;
  /** Already in the target (an earlier run, or the same bytes stored there). */
  skipped: number;
  /** In neither storage: rows whose bytes are lost (their keys in missingKeys, the first 100). */
  missing: number;
  /** Content-addressed bytes in the source that do not hash to their key: not copied. */
  damaged: number;
  /** Bytes copied. */
  bytes: number;
  missingKeys: string[];
}

/** Rows read per query. */
const PAGE_SIZE = 1000;
/** Files copied at once. */
const PARALLEL_COPIES = 8;
const LISTED_MISSING_KEYS = 100;

/**
 * Copies every file the stored_files rows name from `source` to `target` (module comment).
 * Memory: the keys already seen (about 100 bytes each), so each key is counted once.
 * @param onProgress called after each page of rows with the counts so far
 * @throws the storages' errors (AppError UNAVAILABLE when one does not answer): run again to resume
 */
export async function migrateStorage(
  deps: { db: Db; source: FileStorage; target: FileStorage },
  direction: { from: 'local' | 's3'; to: 'local' | 's3' },
  onProgress?: (counts: StorageMigrationResult) => void,
): Promise<StorageMigrationResult> {
  const result: StorageMigrationResult = {
    ...direction,
    files: 0,
    copied: 0,
    skipped: 0,
    missing: 0,
    damaged: 0,
    bytes: 0,
    missingKeys: [],
  };
  const seen = new Set<string>();

  const copy = async (key: string) => {
    if (await deps.target.exists(key)) {
      result.skipped += 1;
      return;
    }
    let bytes: Buffer;
    try {
      bytes = await deps.source.read(key);
    } catch (error) {
      if (!(error instanceof MissingFileError)) throw error;
      result.missing += 1;
      if (result.missingKeys.length < LISTED_MISSING_KEYS) result.missingKeys.push(key);
      return;
    }
    if (key.startsWith('named/')) {
      await deps.target.putNamed(key.slice('named/'.length), () => bytes);
    } else if (storageKeyFor(createHash('sha256').update(bytes).digest('hex')) !== key) {
      // A content-addressed key is its bytes' SHA-256: other bytes under it were damaged in the source.
      result.damaged += 1;
      return;
    } else {
      await deps.target.put(bytes);
    }
    result.copied += 1;
    result.bytes += bytes.byteLength;
  };

  for (let afterId = 0; ; ) {
    const rows = await deps.db.storedFile.findMany({
      where: { id: { gt: afterId } },
      orderBy: { id: 'asc' },
      take: PAGE_SIZE,
      select: { id: true, storageKey: true },
    });
    if (rows.length === 0) break;
    afterId = rows.at(-1)!.id;
    const keys = rows.map((row) => row.storageKey).filter((key) => !seen.has(key) && seen.add(key));
    result.files += keys.length;
    for (let i = 0; i < keys.length; i += PARALLEL_COPIES)
      await Promise.all(keys.slice(i, i + PARALLEL_COPIES).map(copy));
    onProgress?.(result);
  }
  return result;
}
