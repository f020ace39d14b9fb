/**
 * The one tenant check for templates: an unknown id is NOT_FOUND (404), another account's is
 * FORBIDDEN (403 `{"error":"Not authorized"}`), as DocuSeal (reference/docuseal-behaviour.md §2);
 * for an API key limited to folders, a template of the account outside them is FORBIDDEN too
 * (`Not authorized: outside the template folders of this API key`, src/accounts/key-scopes.ts).
 */
import { inKeyFolders, type KeyFolders, outsideFoldersError } from '../accounts/key-scopes.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { AppError } from '../errors.ts';

/**
 * @param options.folders the folders the caller's key is limited to; null (or absent: a caller
 *   without a key, such as a job) for every folder
 * @returns the template's id, account, folder and archive time
 * @throws AppError NOT_FOUND ("Template <id> not found") or FORBIDDEN
 */
export async function findTemplateForAccount(
  db: Pick<Prisma.TransactionClient, 'template'>,
  options: { id: number; accountId: number; folders?: KeyFolders | null | undefined },
): Promise<{ id: number; accountId: number; folderId: number | null; archivedAt: Date | null }> {
  const template = await db.template.findUnique({
    where: { id: options.id },
    select: { id: true, accountId: true, folderId: true, archivedAt: true },
  });
  if (!template) throw new AppError('NOT_FOUND', `Template ${options.id} not found`);
  if (template.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  if (!inKeyFolders(template.folderId, options.folders ?? null)) throw outsideFoldersError();
  return template;
}
