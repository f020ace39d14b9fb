/**
 * Template folders. A folder is addressed by its full name, parents joined with " / "
 * ("Clients / 2026"), as DocuSeal does (reference/docuseal-behaviour.md §4, §5.1); templates
 * without one live in "Default".
 */
import { lockAccountFolders } from '../db/queries/advisory-locks.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { AppError } from '../errors.ts';
import { checkText, MAX_ITEMS, MAX_LENGTH } from '../limits.ts';

export const DEFAULT_FOLDER_NAME = 'Default';
const SEPARATOR = ' / ';

type Tx = Prisma.TransactionClient;

/**
 * Splits a full name into its parts (src/limits.ts: at most MAX_LENGTH.folderName characters,
 * MAX_ITEMS.folderLevels levels of MAX_LENGTH.name).
 * @throws AppError VALIDATION for an empty part, or "folder_name is too long …" / "folder_name has
 *   too many levels (maximum is 10)."
 */
export function folderPath(fullName: string): string[] {
  checkText(fullName, MAX_LENGTH.folderName, 'folder_name');
  const parts = fullName.split(SEPARATOR).map((part) => part.trim());
  if (parts.some((part) => part === '' || part.length > MAX_LENGTH.name)) {
    throw new AppError('VALIDATION', `folder_name "${fullName}" is not a valid folder name.`);
  }
  if (parts.length > MAX_ITEMS.folderLevels) {
    throw new AppError('VALIDATION', `folder_name has too many levels (maximum is ${MAX_ITEMS.folderLevels}).`, {
      details: { path: 'folder_name', maximum: MAX_ITEMS.folderLevels },
    });
  }
  return parts;
}

/**
 * The folder with this full name in the account, created (with its parents) when missing.
 * Serialised per account with a transaction-scoped advisory lock, so concurrent requests for
 * the same new folder create it once.
 * @param fullName e.g. "Clients / 2026"; undefined or blank → "Default"
 * @throws AppError VALIDATION for an empty path segment
 */
export async function findOrCreateFolder(
  tx: Tx,
  options: { accountId: number; authorId: number | null; fullName: string | undefined | null },
): Promise<{ id: number; fullName: string }> {
  const fullName = options.fullName?.trim() ? options.fullName.trim() : DEFAULT_FOLDER_NAME;
  const parts = folderPath(fullName);
  await lockAccountFolders(tx, options.accountId);
  let parentFolderId: number | null = null;
  for (const name of parts) {
    const existing: { id: number } | null = await tx.folder.findFirst({
      where: { accountId: options.accountId, parentFolderId, name, archivedAt: null },
      select: { id: true },
      orderBy: { id: 'asc' },
    });
    const folder: { id: number } =
      existing ??
      (await tx.folder.create({
        data: { accountId: options.accountId, authorId: options.authorId, parentFolderId, name },
        select: { id: true },
      }));
    parentFolderId = folder.id;
  }
  return { id: parentFolderId!, fullName: parts.join(SEPARATOR) };
}

/**
 * Full names of folders, by id (one query per level of nesting, not per folder).
 * @param folders rows with their parent id and name
 */
export async function folderFullNames(db: Pick<Tx, 'folder'>, folderIds: number[]): Promise<Map<number, string>> {
  const byId = new Map<number, { name: string; parentFolderId: number | null }>();
  let missing = [...new Set(folderIds)];
  while (missing.length > 0) {
    const rows = await db.folder.findMany({
      where: { id: { in: missing } },
      select: { id: true, name: true, parentFolderId: true },
    });
    for (const row of rows) byId.set(row.id, row);
    missing = [
      ...new Set(rows.map((r) => r.parentFolderId).filter((id): id is number => id !== null && !byId.has(id))),
    ];
  }
  const names = new Map<number, string>();
  for (const id of folderIds) {
    const parts: string[] = [];
    for (
      let current = byId.get(id), guard = 0;
      current && guard < 64;
      current = current.parentFolderId ? byId.get(current.parentFolderId) : undefined, guard += 1
    ) {
      parts.unshift(current.name);
    }
    names.set(id, parts.join(SEPARATOR));
  }
  return names;
}
