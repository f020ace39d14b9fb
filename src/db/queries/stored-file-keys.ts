/**
 * The lock that keeps shared bytes from being removed under a row being written
 * (src/documents/unused-files.ts, src/documents/store-file.ts). Content-addressed bytes are
 * shared by every StoredFile row with their key, so "no row uses this key" can turn false between
 * a check and the removal: a writer puts the bytes (found there: nothing written) and inserts its
 * row. Both sides take a transaction-scoped advisory lock on the key: writers shared (they do not
 * wait for each other), from before they check that the bytes are there until their row commits;
 * the remover exclusive, around its check and the removal. Either the writer's row is committed
 * (and seen) before the check, or the removal is over before the writer checks (and puts the
 * bytes again). Lock space 7301007 (./advisory-locks.ts lists the spaces); the second key is the
 * storage key's hashtext (a collision only makes one wait for the other).
 */
import type { Prisma } from '../../generated/prisma/client.ts';

type Tx = Pick<Prisma.TransactionClient, '$executeRaw' | '$queryRaw'>;

/** A writer's lock on a storage key, until its transaction ends (module comment). */
export async function lockStorageKeyShared(tx: Tx, key: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock_shared(7301007, hashtext(${key}))`;
}

/** The remover's lock on a storage key, until its transaction ends (module comment). */
export async function lockStorageKey(tx: Tx, key: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(7301007, hashtext(${key}))`;
}

/** Whether a StoredFile row uses `key` (`sha256`: the bytes' SHA-256 its rows carry, for the index). */
export async function storageKeyInUse(tx: Tx, key: string, sha256: string): Promise<boolean> {
  const rows = await tx.$queryRaw<{ used: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM stored_files WHERE sha256 = ${sha256} AND storage_key = ${key}) AS used`;
  return rows[0]?.used === true;
}
