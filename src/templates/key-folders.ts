/**
 * API keys limited to template folders (src/accounts/key-scopes.ts): the folders are named by
 * their full names ("Sales", "Clients / 2026"), found or created as a template's folder is
 * (findOrCreateFolder), then the key is made with their ids. Here rather than beside createApiKey
 * (src/accounts/api-keys.ts) because folders are the templates' (imports run down the layers).
 */
import { z } from 'zod';
import { ApiKeyScopes, type ApiKeySummary, createApiKey, parseInput } from '../accounts/api-keys.ts';
import type { KeyFolders } from '../accounts/key-scopes.ts';
import type { Db } from '../db/client.ts';
import { AppError } from '../errors.ts';
import { MAX_ITEMS, MAX_LENGTH } from '../limits.ts';
import { findOrCreateFolders } from './folders.ts';

/**
 * A create-key request (GraphQL `createApiKey`'s input; the CLI's `api-key create` options): one
 * definition, in DocuSeal-style snake_case keys (docs/architecture.md "Inputs: one definition each").
 */
export const CreateApiKeyRequest = z.object({
  name: z
    .string()
    .trim()
    .min(1)
    .max(MAX_LENGTH.name)
    .optional()
    .meta({ description: 'A label for the key (default "default").' }),
  scopes: ApiKeyScopes.optional().meta({
    description:
      '`read` (queries and subscriptions; REST GET) and/or `write` (everything; a write key also reads). ' +
      'Default: both. A key cannot give a scope it lacks.',
  }),
  folders: z
    .array(z.string().trim().min(1).max(MAX_LENGTH.folderName))
    .max(MAX_ITEMS.apiKeyFolders)
    .optional()
    .meta({
      description:
        'Full folder names ("Sales", "Clients / 2026"), made when missing: the key then sees and touches only ' +
        "the templates in them and their subfolders, and those templates' submissions. Default: every folder. A " +
        'key limited to folders may only name folders within its own.',
    }),
});

/**
 * Creates an API key for a user with its scopes and the folders it is limited to, found or created
 * in the user's account, in one transaction (a refused request creates no folder).
 * @param input.folders full folder names; none or [] for a key of every folder
 * @param options.within the creating key (createApiKey): a key limited to folders names only folders
 *   within its own (subfolders of them may be new)
 * @returns the summary and the token, which is never shown again
 * @throws AppError NOT_FOUND (user), VALIDATION (a scope or folder name), FORBIDDEN (createApiKey's)
 */
export async function createApiKeyInFolders(
  db: Db,
  input: { userId: number } & z.input<typeof CreateApiKeyRequest>,
  options: { within?: { scopes: readonly string[]; folders: KeyFolders | null } } = {},
): Promise<{ apiKey: ApiKeySummary; token: string }> {
  const { userId } = input;
  const { name, scopes, folders } = parseInput(CreateApiKeyRequest, {
    name: input.name,
    scopes: input.scopes,
    folders: input.folders,
  });
  if (!folders?.length) return createApiKey(db, { userId, name, scopes }, options);
  return db.$transaction(async (tx) => {
    const user = await tx.user.findUnique({ where: { id: userId }, select: { accountId: true, archivedAt: true } });
    if (!user || user.archivedAt) throw new AppError('NOT_FOUND', `User ${userId} not found`);
    const found = await findOrCreateFolders(tx, {
      accountId: user.accountId,
      authorId: userId,
      fullNames: folders,
      folders: options.within?.folders ?? null,
    });
    const folderIds = found.map((f) => f.id);
    // Each was checked against the creating key's folders as it was found: a new subfolder of
    // one of them is within them too, though made after the key's folders were read.
    const caller = options.within;
    const within = caller?.folders
      ? { ...caller, folders: { ...caller.folders, ids: [...caller.folders.ids, ...folderIds] } }
      : caller;
    return createApiKey(tx, { userId, name, scopes, folderIds }, { within });
  });
}
