/**
 * What an API key may do (issue 16; docs/security.md "Scoped API keys"), the one place of these
 * rules:
 * - its scopes: `read` (GraphQL queries and subscriptions; the REST routes whose operation is a
 *   query: every GET, and `POST /tools/verify|merge`, which change nothing) and `write` (everything).
 *   A write key also reads: changing records without seeing them serves no one, and most writes
 *   answer with the record. So a key holds `read`, or `read` and `write`;
 * - the template folders it may be limited to, with their subfolders (a DocuSeal folder holds its
 *   subfolders: TemplateFolder#subfolders, src/templates/folders.ts), resolved on every request
 *   (src/db/queries/api-keys.ts AUTHENTICATE), so a subfolder made later is in them too. Such a key
 *   sees and touches only the templates in them and the submissions and submitters of those
 *   templates; what is account-wide (webhook endpoints and deliveries, the account's settings)
 *   needs a key without a folder limit.
 * Keys made before scopes existed have both scopes and no folder limit. A refusal is FORBIDDEN
 * (REST 403 `{"error": "..."}`) naming what the key lacks, with `details.scope`.
 */
import { AppError } from '../errors.ts';
import type { Prisma } from '../generated/prisma/client.ts';

/** The scopes, narrowest first. */
export const API_KEY_SCOPES = ['read', 'write'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** The template folders a key is limited to. A key without a limit has `null` instead. */
export interface KeyFolders {
  /** The folders the key was given, in the order given: the first takes templates a request puts in no folder. */
  rootIds: readonly number[];
  /** Those folders and all their subfolders: what the key may touch. */
  ids: readonly number[];
}

/** A caller as the services see it: the account it acts in, and the folders its key is limited to (null: all). */
export interface FolderScope {
  accountId: number;
  folders: KeyFolders | null;
}

/**
 * The scopes a key is stored with: those asked for, with `read` added to `write` (a write key
 * reads), in API_KEY_SCOPES order; both when none is asked for (a key as keys were before scopes).
 */
export function keyScopes(requested: readonly ApiKeyScope[] | undefined): ApiKeyScope[] {
  if (!requested || requested.length === 0) return [...API_KEY_SCOPES];
  const wanted = new Set<ApiKeyScope>(requested);
  if (wanted.has('write')) wanted.add('read');
  return API_KEY_SCOPES.filter((scope) => wanted.has(scope));
}

/** The scope a GraphQL operation needs: `write` for a mutation, `read` for a query or a subscription. */
export function scopeOfOperation(operation: 'query' | 'mutation' | 'subscription'): ApiKeyScope {
  return operation === 'mutation' ? 'write' : 'read';
}

/**
 * The refusal of a key that lacks `scope`, or undefined when it has it.
 * @returns AppError FORBIDDEN `Not authorized: this API key lacks the "write" scope`, details `{scope}`
 */
export function missingScope(key: { scopes: readonly string[] }, scope: ApiKeyScope): AppError | undefined {
  if (key.scopes.includes(scope)) return undefined;
  return new AppError('FORBIDDEN', `Not authorized: this API key lacks the "${scope}" scope`, { details: { scope } });
}

/**
 * Whether a template in `folderId` (null: none, DocuSeal's "Default") is within `folders`
 * (null: every folder).
 */
export function inKeyFolders(folderId: number | null, folders: KeyFolders | null): boolean {
  return folders === null || (folderId !== null && folders.ids.includes(folderId));
}

/**
 * Whether a folder, given by the ids of its path (root first), is within `folders` (null: every
 * folder): one of the key's folders, or inside one. The path of a folder being created has its
 * existing parents' ids.
 */
export function pathInKeyFolders(pathIds: readonly number[], folders: KeyFolders | null): boolean {
  return folders === null || pathIds.some((id) => folders.ids.includes(id));
}

/** FORBIDDEN for a template (or its submission, submitter) outside the key's folders. */
export function outsideFoldersError(): AppError {
  return new AppError('FORBIDDEN', 'Not authorized: outside the template folders of this API key', {
    details: { scope: 'folders' },
  });
}

/**
 * Refuses a key limited to folders where the request reaches beyond templates: account-wide
 * records and settings (`what`: "webhook endpoints", "the account's settings").
 * @throws AppError FORBIDDEN `Not authorized: <what> need an API key for every folder`, details `{scope: 'folders'}`
 */
export function requireEveryFolder(folders: KeyFolders | null, what: string): void {
  if (folders !== null)
    throw new AppError('FORBIDDEN', `Not authorized: ${what} need an API key that is not limited to folders`, {
      details: { scope: 'folders' },
    });
}

/** Prisma conditions keeping templates within the key's folders (none without a limit). */
export function templatesInFolders(folders: KeyFolders | null): Prisma.TemplateWhereInput {
  return folders === null ? {} : { folderId: { in: [...folders.ids] } };
}

/** Prisma conditions keeping submissions of templates within the key's folders. */
export function submissionsInFolders(folders: KeyFolders | null): Prisma.SubmissionWhereInput {
  return folders === null ? {} : { template: templatesInFolders(folders) };
}

/** Prisma conditions keeping submitters of submissions within the key's folders. */
export function submittersInFolders(folders: KeyFolders | null): Prisma.SubmitterWhereInput {
  return folders === null ? {} : { submission: submissionsInFolders(folders) };
}

/**
 * Whether a key with `scopes` and folder limit `folderIds` (its folders; [] for none) reaches no
 * further than `caller`: every scope is the caller's, and, when the caller is limited to folders,
 * the key is too, to folders within the caller's. A key creates, sees in `apiKeys` and revokes only
 * keys within it, so no key makes a broader one.
 */
export function keyWithin(
  key: { scopes: readonly string[]; folderIds: readonly number[] },
  caller: { scopes: readonly string[]; folders: KeyFolders | null },
): boolean {
  if (!key.scopes.every((scope) => caller.scopes.includes(scope))) return false;
  if (caller.folders === null) return true;
  const { ids } = caller.folders;
  return key.folderIds.length > 0 && key.folderIds.every((id) => ids.includes(id));
}
