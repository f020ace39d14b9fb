/**
 * API key scopes over GraphQL (src/accounts/key-scopes.ts): a Yoga plugin notes on the context
 * the scope the operation needs — `read` for a query or a subscription, `write` for a mutation —
 * before it runs, over HTTP (Yoga, SSE) and graphql-ws alike (both run Yoga's envelope:
 * src/graphql/server.ts). requireViewer (src/graphql/context.ts), which every field acting for a
 * key calls, then refuses a key without it: FORBIDDEN `Not authorized: this API key lacks the
 * "write" scope`. Per field rather than per operation, so the signing form's mutations, whose
 * capability is a slug and not a key, answer as without a key.
 */
import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { scopeOfOperation } from '../accounts/key-scopes.ts';
import type { GraphQLContext } from './context.ts';

/** The Yoga plugin: sets `operationScope` on the context of each execution and subscription. */
export function useKeyScopes(): Plugin<Record<string, unknown>> {
  const note = (args: {
    document: Parameters<typeof getOperationAST>[0];
    operationName?: string | null;
    contextValue: unknown;
  }) => {
    const operation = getOperationAST(args.document, args.operationName);
    // No operation (several without a name): graphql-js refuses it before any resolver runs.
    if (operation) (args.contextValue as GraphQLContext).operationScope = scopeOfOperation(operation.operation);
  };
  return {
    onExecute({ args }) {
      note(args);
    },
    onSubscribe({ args }) {
      note(args);
    },
  };
}
