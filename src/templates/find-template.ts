/**
 * The one tenant check for templates: an unknown id is NOT_FOUND (404), another account's is
 * FORBIDDEN (403 `{"error":"Not authorized"}`), as DocuSeal (reference/docuseal-behaviour.md §2).
 */
import type { Prisma } from '../generated/prisma/client.ts';
import { AppError } from '../errors.ts';

/**
 * @returns the template's id, account and archive time
 * @throws AppError NOT_FOUND ("Template <id> not found") or FORBIDDEN
 */
export async function findTemplateForAccount(
  db: Pick<Prisma.TransactionClient, 'template'>,
  options: { id: number; accountId: number },
): Promise<{ id: number; accountId: number; archivedAt: Date | null }> {
  const template = await db.template.findUnique({
    where: { id: options.id },
    select: { id: true, accountId: true, archivedAt: true },
  });
  if (!template) throw new AppError('NOT_FOUND', `Template ${options.id} not found`);
  if (template.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  return template;
}
