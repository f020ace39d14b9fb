/**
 * `Idempotency-Key` on GraphQL mutations over HTTP (docs/idempotency.md; the rules:
 * src/accounts/idempotency-keys.ts), a Yoga plugin:
 * - onExecute (the document parsed, validated and within its limits; the caller known): a
 *   mutation sent with the header by a caller with a valid API key claims the key for the
 *   account, keyed by the document (printed), the operation name and the variables (canonical
 *   JSON); or it is answered with the kept answer, or refused with `extensions.code`
 *   IDEMPOTENCY_KEY_IN_USE, IDEMPOTENCY_KEY_REUSED or VALIDATION (an empty or too long key);
 * - onResponse: the HTTP answer (status, Content-Type, body as sent: JSON, or the event stream of a
 *   mutation sent with `Accept: text/event-stream`, which ends after its one result) is kept when execution began
 *   (the result has `data`, null included: GraphQL's own "request errors" such as refused variables
 *   come without it and give the key back, as Stripe keeps nothing of a request that failed
 *   validation), and a replay's answer is the kept one with `Idempotent-Replayed: true`.
 *
 * Queries and subscriptions ignore the header (they change nothing), as do callers without an API
 * key (the signing form's slug mutations: no account to scope the key to). graphql-ws has no
 * per-message headers: a mutation over a WebSocket whose connectionParams carry `Idempotency-Key`
 * is refused (BAD_REQUEST) rather than run without the protection its client asked for; send such
 * mutations over HTTP. `createApiKey` refuses a key (VALIDATION): its answer is the new key in
 * clear, which Signet keeps only as a SHA-256 and will not store for a replay.
 *
 * An operation without the header costs one header look-up here.
 */
import {
  type DocumentNode,
  type ExecutionResult,
  getOperationAST,
  GraphQLError,
  Kind,
  print,
  type SelectionSetNode,
} from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Viewer } from '../accounts/authenticate.ts';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  type IdempotencyClaim,
  type IdempotencyKeys,
  type IdempotentAnswer,
  isKeptStatus,
  readIdempotencyKey,
  requestFingerprint,
} from '../accounts/idempotency-keys.ts';
import { AppError } from '../errors.ts';
import { findAppError } from './errors.ts';

/** Mutations whose answer holds a secret shown once, which is never stored: a key on them is refused. */
const SECRET_ANSWERS = new Set(['createApiKey']);

/** The part of the execution context this plugin reads (Yoga's over HTTP, graphql-ws's initial one). */
interface KeyedContext {
  request?: Request;
  connectionParams?: Record<string, unknown>;
  viewer?: Viewer | null;
}

type KeyedRequest = { replay: IdempotentAnswer } | { claim: IdempotencyClaim; began: boolean };

/** The Yoga plugin (src/graphql/server.ts registers it after the context and limits plugins). */
export function useIdempotencyKeys(keys: IdempotencyKeys): Plugin {
  const keyedRequests = new WeakMap<Request, KeyedRequest>();
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const context = args.contextValue as KeyedContext;
      const { request } = context;
      const header = request ? request.headers.get(IDEMPOTENCY_KEY_HEADER) : keyInConnectionParams(context);
      if (header === null || header === undefined) return;
      const operation = getOperationAST(args.document, args.operationName);
      if (operation?.operation !== 'mutation') return;
      const refuse = (error: AppError) => setResultAndStopExecution(refusal(error));
      if (!request) {
        return refuse(
          new AppError(
            'BAD_REQUEST',
            'Idempotency-Key is not supported over graphql-ws (a WebSocket has no per-request headers); ' +
              'send this mutation over HTTP (POST /graphql) with the Idempotency-Key header.',
          ),
        );
      }
      const viewer = context.viewer;
      if (!viewer) return;
      return (async () => {
        try {
          const key = readIdempotencyKey(header);
          const secret = rootFieldNames(args.document, operation.selectionSet).find((name) => SECRET_ANSWERS.has(name));
          if (secret)
            throw new AppError(
              'VALIDATION',
              `Idempotency-Key is not accepted on ${secret}: its answer holds a secret that is never stored.`,
            );
          const fingerprint = requestFingerprint([
            'graphql',
            print(args.document),
            args.operationName ?? null,
            args.variableValues ?? null,
          ]);
          const start = await keys.begin({ accountId: viewer.account.id, apiKeyId: viewer.apiKeyId, key, fingerprint });
          if (start.replay) {
            // onResponse sends the kept answer instead of this placeholder.
            keyedRequests.set(request, { replay: start.replay });
            return setResultAndStopExecution({ data: null });
          }
          const keyed = { claim: start.run, began: false };
          keyedRequests.set(request, keyed);
          return {
            onExecuteDone({ result }) {
              keyed.began = !isAsyncIterable(result) && (result as ExecutionResult).data !== undefined;
            },
          };
        } catch (error) {
          const appError = findAppError(error);
          if (!appError || appError.code === 'UNAVAILABLE') throw error;
          return refuse(appError);
        }
      })();
    },
    async onResponse({ request, response, setResponse, fetchAPI }) {
      const keyed = keyedRequests.get(request);
      if (!keyed) return;
      keyedRequests.delete(request);
      if ('replay' in keyed) {
        const headers = new fetchAPI.Headers({ [IDEMPOTENT_REPLAYED_HEADER]: 'true' });
        if (keyed.replay.contentType) headers.set('content-type', keyed.replay.contentType);
        return setResponse(new fetchAPI.Response(keyed.replay.body, { status: keyed.replay.status, headers }));
      }
      if (!keyed.began || !isKeptStatus(response.status)) return keyed.claim.release();
      // The answer is read to keep it, then sent as read (its stream is used up).
      const body = await response.text();
      await keyed.claim.finish({ status: response.status, contentType: response.headers.get('content-type'), body });
      setResponse(new fetchAPI.Response(body, { status: response.status, headers: response.headers }));
    },
  };
}

/** The result that refuses the operation with an AppError (`extensions.code`; kept by the error masking). */
function refusal(error: AppError): ExecutionResult {
  return { errors: [new GraphQLError(error.message, { originalError: error, extensions: error.extensions })] };
}

/** The Idempotency-Key among graphql-ws connectionParams (any case), or undefined. */
function keyInConnectionParams(context: KeyedContext): string | undefined {
  const params = context.connectionParams;
  if (!params) return undefined;
  const name = Object.keys(params).find((key) => key.toLowerCase() === IDEMPOTENCY_KEY_HEADER);
  return name === undefined ? undefined : String(params[name]);
}

/** The names of the root fields an operation selects, through fragments (the document is valid: no cycles). */
function rootFieldNames(document: DocumentNode, selectionSet: SelectionSetNode): string[] {
  const names: string[] = [];
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) names.push(selection.name.value);
    else if (selection.kind === Kind.INLINE_FRAGMENT) names.push(...rootFieldNames(document, selection.selectionSet));
    else {
      const fragment = document.definitions.find(
        (definition) => definition.kind === Kind.FRAGMENT_DEFINITION && definition.name.value === selection.name.value,
      );
      if (fragment?.kind === Kind.FRAGMENT_DEFINITION) names.push(...rootFieldNames(document, fragment.selectionSet));
    }
  }
  return names;
}
