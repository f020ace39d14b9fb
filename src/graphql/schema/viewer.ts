import type { Viewer } from '../../accounts/authenticate.ts';
import { builder } from '../builder.ts';
import { requireViewer } from '../context.ts';
import { AccountRef, UserRef } from './account.ts';

const ViewerRef = builder.objectRef<Viewer>('Viewer').implement({
  description: 'The caller: the user whose API key authenticated the request, and their account.',
  fields: (t) => ({
    // Already loaded by authentication: no further query.
    user: t.field({ type: UserRef, resolve: (viewer) => viewer.user }),
    account: t.field({ type: AccountRef, resolve: (viewer) => viewer.account }),
  }),
});

builder.queryField('viewer', (t) =>
  t.field({
    type: ViewerRef,
    description: 'The authenticated caller. Errors with code UNAUTHENTICATED without a valid API key.',
    resolve: (_root, _args, ctx) => requireViewer(ctx),
  }),
);
