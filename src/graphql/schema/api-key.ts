import { createApiKey, revokeApiKey } from '../../accounts/api-keys.ts';
import type { ApiKey } from '../../generated/prisma/client.ts';
import { builder } from '../builder.ts';
import { requireViewer } from '../context.ts';

const ApiKeyRef = builder.prismaObject('ApiKey', {
  description: 'An API key. The token itself is shown only once, in CreateApiKeyPayload.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name'),
    prefix: t.exposeString('prefix', { description: 'The first characters of the token.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
    user: t.relation('user'),
  }),
});

builder.queryField('apiKeys', (t) =>
  t.prismaField({
    type: [ApiKeyRef],
    description: "The API keys of the caller's account, oldest first, revoked ones included.",
    resolve: (query, _root, _args, ctx) => {
      const { account } = requireViewer(ctx);
      return ctx.db.apiKey.findMany({ ...query, where: { accountId: account.id }, orderBy: { id: 'asc' } });
    },
  }),
);

const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', {
  fields: (t) => ({
    name: t.string({ required: false, description: 'A label for the key (default "default").' }),
  }),
});

const CreateApiKeyPayload = builder.objectRef<{ apiKey: ApiKey; token: string }>('CreateApiKeyPayload').implement({
  fields: (t) => ({
    apiKey: t.field({ type: ApiKeyRef, resolve: (payload) => payload.apiKey }),
    token: t.exposeString('token', { description: 'The key to send as X-Auth-Token. Shown once; store it now.' }),
  }),
});

builder.mutationField('createApiKey', (t) =>
  t.field({
    type: CreateApiKeyPayload,
    description: 'Creates an API key for the calling user.',
    args: { input: t.arg({ type: CreateApiKeyInput, required: false }) },
    resolve: async (_root, { input }, ctx) => {
      const { user } = requireViewer(ctx);
      const { apiKey, token } = await createApiKey(ctx.db, { userId: user.id, name: input?.name ?? undefined });
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
      '(closed with 4403) and SSE streams opened with it end, on every instance.',
    args: { input: t.arg({ type: RevokeApiKeyInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account } = requireViewer(ctx);
      const revoked = await revokeApiKey(ctx.db, { keyId: input.id, accountId: account.id, live: ctx.live });
      return { apiKey: await ctx.db.apiKey.findUniqueOrThrow({ where: { id: revoked.id } }) };
    },
  }),
);
