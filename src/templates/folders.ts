/**
 * Template folders. A folder is addressed by its full name, parents joined with " / "
 * ("Clients / 2026"), as DocuSeal does (reference/docuseal-behaviour.md §4, §5.1); templates
 * without one live in "Default".
 */
import { type KeyFolders, outsideFoldersError, pathInKeyFolders } from '../accounts/key-scopes.ts';
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
 * the same new folder create it once. For a key limited to folders (`options.folders`,
 * src/accounts/key-scopes.ts) the folder must be one of them or inside one (a new subfolder of
 * one is), and a blank name means the key's first folder instead of "Default"; the caller's
 * transaction then rolls back what a refusal created.
 * @param fullName e.g. "Clients / 2026"; undefined or blank → "Default" (a limited key: its first folder)
 * @throws AppError VALIDATION for an empty path segment; FORBIDDEN outside the key's folders
 */
export async function findOrCreateFolder(
  tx: Tx,
  options: {
    accountId: number;
    authorId: number | null;
    fullName: string | undefined | null;
    folders?: KeyFolders | null | undefined;
  },
): Promise<{ id: number; fullName: string }> {
  const folders = options.folders ?? null;
  if (folders !== null && !options.fullName?.trim()) {
    const id = folders.rootIds[0]!;
    return { id, fullName: (await folderFullNames(tx, [id])).get(id) ?? '' };
  }
  const fullName = options.fullName?.trim() ? options.fullName.trim() : DEFAULT_FOLDER_NAME;
  const parts = folderPath(fullName);
  await lockAccountFolders(tx, options.accountId);
  const pathIds: number[] = [];
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
    pathIds.push(folder.id);
  }
  if (!pathInKeyFolders(pathIds, folders)) throw outsideFoldersError();
  return { id: parentFolderId!, fullName: parts.join(SEPARATOR) };
}

/**
 * Refuses, before anything is read, converted or written, a folder name that findOrCreateFolder
 * would refuse for a key limited to folders: the name's folders that exist already (a new
 * subfolder of one of the key's folders is within it). Nothing is created.
 * @throws AppError FORBIDDEN outside the key's folders; VALIDATION for a bad name (folderPath)
 */
export async function checkFolderNameInKeyFolders(
  db: Pick<Tx, 'folder'>,
  options: { accountId: number; folders: KeyFolders | null; fullName: string | undefined | null },
): Promise<void> {
  if (options.folders === null || !options.fullName?.trim()) return;
  const pathIds: number[] = [];
  let parentFolderId: number | null = null;
  for (const name of folderPath(options.fullName.trim())) {
    const existing: { id: number } | null = await db.folder.findFirst({
      where: { accountId: options.accountId, parentFolderId, name, archivedAt: null },
      select: { id: true },
      orderBy: { id: 'asc' },
    });
    if (!existing) break;
    pathIds.push(existing.id);
    parentFolderId = existing.id;
  }
  if (!pathInKeyFolders(pathIds, options.folders)) throw outsideFoldersError();
}

/**
 * The folders of these full names, found or created (findOrCreateFolder), in the order given
 * without repeats: the folders an API key is limited to (src/templates/key-folders.ts). With
 * `options.folders` (the creating key's limit) each must be within it.
 * @throws AppError VALIDATION for a bad name; FORBIDDEN outside `options.folders`
 */
export async function findOrCreateFolders(
  tx: Tx,
  options: {
    accountId: number;
    authorId: number | null;
    fullNames: readonly string[];
    folders: KeyFolders | null;
  },
): Promise<{ id: number; fullName: string }[]> {
  const found: { id: number; fullName: string }[] = [];
  for (const fullName of options.fullNames) {
    const folder = await findOrCreateFolder(tx, { ...options, fullName });
    if (!found.some((f) => f.id === folder.id)) found.push(folder);
  }
  return found;
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
