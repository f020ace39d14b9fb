/**
 * API keys over GraphQL: the ApiKey type with its scopes and folders (src/accounts/key-scopes.ts),
 * `apiKeys`, `createApiKey` and `revokeApiKey`. A key sees, makes and revokes only keys that reach
 * no further than itself (keyWithin): a key limited to folders cannot make a broader one.
 */
import { revokeApiKey } from '../../accounts/api-keys.ts';
import { keyWithin } from '../../accounts/key-scopes.ts';
import type { ApiKey } from '../../generated/prisma/client.ts';
import { createApiKeyInFolders, CreateApiKeyRequest } from '../../templates/key-folders.ts';
import { templateFolderName } from '../../templates/read-models.ts';
import { builder } from '../builder.ts';
import { requireViewer } from '../context.ts';
import { fromGraphQLInput, zodInputType } from '../zod-input.ts';

const ApiKeyRef = builder.prismaObject('ApiKey', {
  description: 'An API key. The token itself is shown only once, in CreateApiKeyPayload.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name'),
    prefix: t.exposeString('prefix', { description: 'The first characters of the token.' }),
    scopes: t.exposeStringList('scopes', {
      description: '`read` (queries and subscriptions; REST GET), or `read` and `write` (everything).',
    }),
    folders: t.stringList({
      description:
        'The full names of the template folders the key is limited to (their subfolders too), in the order given; ' +
        '[] when it may use every folder.',
      select: { folderIds: true },
      resolve: (key, _args, ctx) =>
        Promise.all(
          key.folderIds.map((id) => templateFolderName(id, (folderId) => ctx.loaders.folderName.load(folderId))),
        ),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
    user: t.relation('user'),
  }),
});

builder.queryField('apiKeys', (t) =>
  t.prismaField({
    type: [ApiKeyRef],
    description:
      "The API keys of the caller's account, oldest first, revoked ones included; for a key limited to folders, " +
      'the keys limited to folders within its own.',
    resolve: async (query, _root, _args, ctx) => {
      const viewer = requireViewer(ctx);
      const keys = await ctx.db.apiKey.findMany({
        ...query,
        where: { accountId: viewer.account.id },
        orderBy: { id: 'asc' },
      });
      // One query either way: the keys' scalar columns come with Pothos' selection.
      return viewer.folders ? keys.filter((key) => keyWithin({ scopes: [], folderIds: key.folderIds }, viewer)) : keys;
    },
  }),
);

// Derived from its one definition (src/templates/key-folders.ts).
const CreateApiKeyInput = zodInputType('CreateApiKeyInput', CreateApiKeyRequest);

const CreateApiKeyPayload = builder.objectRef<{ apiKey: ApiKey; token: string }>('CreateApiKeyPayload').implement({
  fields: (t) => ({
    apiKey: t.field({ type: ApiKeyRef, resolve: (payload) => payload.apiKey }),
    token: t.exposeString('token', { description: 'The key to send as X-Auth-Token. Shown once; store it now.' }),
  }),
});

builder.mutationField('createApiKey', (t) =>
  t.field({
    type: CreateApiKeyPayload,
    description:
      'Creates an API key for the calling user, with the scopes and folders given (default: both scopes, every ' +
      'folder). FORBIDDEN when it would reach further than the calling key (a scope it lacks, or folders outside ' +
      'its own).',
    args: { input: t.arg({ type: CreateApiKeyInput, required: false }) },
    resolve: async (_root, { input }, ctx) => {
      const viewer = requireViewer(ctx);
      const request = input ? fromGraphQLInput(CreateApiKeyRequest, input) : {};
      const { apiKey, token } = await createApiKeyInFolders(
        ctx.db,
        { userId: viewer.user.id, ...request },
        { within: viewer },
      );
      return { apiKey: await ctx.db.apiKey.findUniqueOrThrow({ where: { id: apiKey.id } }), token };
    },
  }),
);

const RevokeApiKeyInput = builder.inputType('RevokeApiKeyInput', {
  fields: (t) => ({ id: t.int({ required: true }) }),
});

const RevokeApiKeyPayload = builder.objectRef<{ apiKey: ApiKey }>('RevokeApiKeyPayload').implement({
  fields: (t) => ({ apiKey: t.field({ type: ApiKeyRef, resolve: (payload) => payload.apiKey }) }),
});

builder.mutationField('revokeApiKey', (t) =>
  t.field({
    type: RevokeApiKeyPayload,
    description:
      "Revokes one of the account's API keys: requests with it then fail with UNAUTHENTICATED, and the WebSockets " +
      '(closed with 4403) and SSE streams opened with it end, on every instance. A key limited to folders revokes ' +
      'only keys limited to folders within its own (else FORBIDDEN).',
    args: { input: t.arg({ type: RevokeApiKeyInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const viewer = requireViewer(ctx);
      const revoked = await revokeApiKey(ctx.db, {
        keyId: input.id,
        accountId: viewer.account.id,
        within: viewer,
      });
      return { apiKey: await ctx.db.apiKey.findUniqueOrThrow({ where: { id: revoked.id } }) };
    },
  }),
);
