/**
 * GraphQL limits (issue 12 §1 "GraphQL amplification", DESIGN.md "limits", docs/security.md
 * "GraphQL limits"). Every operation over HTTP (POST, GET, SSE) and graphql-ws is checked before
 * it runs: its tokens while it is parsed, then its depth, aliases, directives and cost while it is
 * validated; its result is measured once serialized. A caller without a valid API key gets the
 * tighter anonymous limits. Over a limit → a GraphQL error naming the limit, `extensions.code`
 * GRAPHQL_LIMIT_EXCEEDED, HTTP 400.
 *
 * Library: GraphQL Armor (@escape.tech/graphql-armor-*), Escape's maintained limits for envelop
 * and Yoga. Its max-tokens parser counts tokens inside graphql-js's parser and stops at the limit,
 * so a 3,000-deep document is refused after N tokens instead of overflowing the recursive parser's
 * stack; its depth, aliases, directives and cost rules look at the operation when validation
 * enters it and throw there, before graphql-js's own rules (some quadratic) walk the selections.
 * Introspection is refused with graphql-js's own NoSchemaIntrospectionCustomRule.
 *
 * Armor takes fixed numbers, so each tier has its own parser and rules, chosen per operation by
 * `isAuthenticated(context)` — the caller is known before parsing (server.ts builds the context
 * first). Each tier also has its own parse and validation cache: Yoga's cache keys documents by
 * their text alone, so a document parsed and validated for an authenticated caller would be
 * served to an anonymous one without its limits (Yoga's cache is turned off in server.ts).
 */
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { MaxTokensParserWLexer } from '@escape.tech/graphql-armor-max-tokens';
import type { GraphQLArmorRejectCallback } from '@escape.tech/graphql-armor-types';
import {
  type DocumentNode,
  type ExecutionResult,
  getOperationAST,
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  type ParseOptions,
  type Source,
  type ValidationRule,
} from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import type { GraphQLLimits } from '../config.ts';

/**
 * `extensions.code` of an operation over a limit. A GraphQL-layer code beside Yoga's
 * GRAPHQL_PARSE_FAILED and GRAPHQL_VALIDATION_FAILED, not an AppError code: the REST gateway runs
 * its own fixed operations and never meets these limits.
 */
export const GRAPHQL_LIMIT_EXCEEDED = 'GRAPHQL_LIMIT_EXCEEDED';

/** HTTP status of an answer that carries a GRAPHQL_LIMIT_EXCEEDED error, whatever the `Accept`. */
const LIMIT_STATUS = 400;

/** Distinct documents kept per tier (parsed, or refused), and their text's total size in characters. */
const CACHE_DOCUMENTS = 1024;
const CACHE_CHARACTERS = 16 * 1024 * 1024;

/** A GraphQL error for an operation over a limit, with `extensions.code` GRAPHQL_LIMIT_EXCEEDED. */
export function limitExceededError(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: GRAPHQL_LIMIT_EXCEEDED } });
}

/** Whether an error is a limit error (limitExceededError). */
export function isLimitExceededError(error: unknown): error is GraphQLError {
  return error instanceof GraphQLError && error.extensions?.code === GRAPHQL_LIMIT_EXCEEDED;
}

export type CallerTier = 'anonymous' | 'authenticated';

interface Tier {
  limits: GraphQLLimits;
  parse(source: string | Source, options?: ParseOptions): DocumentNode;
  rules: ValidationRule[];
  /** Document text → its document, or the error parsing it gave. */
  documents: LRUCache<string, DocumentNode | GraphQLError>;
  /** Document → its validation errors (none: valid). */
  validations: WeakMap<DocumentNode, readonly Error[]>;
}

// Armor builds its own error and throws it (propagateOnRejection); rejecting through this callback
// instead throws the error with our code, at the same point.
const reject: GraphQLArmorRejectCallback = (_context, error) => {
  throw limitExceededError(error.message);
};
const armor = { onReject: [reject], propagateOnRejection: false, exposeLimits: true };

function createTier(limits: GraphQLLimits, introspection: boolean): Tier {
  return {
    limits,
    parse: (source, options) =>
      new MaxTokensParserWLexer(source, { ...options, ...armor, n: limits.maxTokens }).parseDocument(),
    rules: [
      // `__typename` is not exempt (Armor exempts it by default): 1,500 aliases of it answered 47 MB.
      maxAliasesRule({ ...armor, n: limits.maxAliases, allowList: [] }),
      // A fragment spread or inline fragment is not a level of the answer.
      maxDepthRule({ ...armor, n: limits.maxDepth, flattenFragments: true }),
      maxDirectivesRule({ ...armor, n: limits.maxDirectives }),
      costLimitRule({ ...armor, maxCost: limits.maxCost, flattenFragments: true }),
      ...(introspection ? [] : [NoSchemaIntrospectionCustomRule]),
    ],
    documents: new LRUCache({
      max: CACHE_DOCUMENTS,
      maxSize: CACHE_CHARACTERS,
      sizeCalculation: (_value, key) => key.length || 1,
    }),
    validations: new WeakMap(),
  };
}

/**
 * The envelop/Yoga plugin that applies the limits. Put it in Yoga's `plugins` with
 * `parserAndValidationCache: false` (it caches per tier itself); graphql-ws gets it through
 * `yoga.getEnveloped`, whose parse, validate and execute run its hooks.
 *
 * - parse: the tier's token-limited parser; a document over the limit → GraphQLError
 *   "Syntax Error: Token limit of N exceeded." (thrown, as parse errors are).
 * - validate: graphql-js's rules plus the tier's depth, aliases, directives and cost rules (and
 *   NoSchemaIntrospectionCustomRule unless `introspection`); a limit → one validation error
 *   "Syntax Error: Query depth limit of N exceeded, found M." (Armor's wording).
 * - execute: the result serialized as JSON is measured in UTF-8 bytes; over the tier's maximum
 *   the data is dropped for an error "Response size limit of 2 MB exceeded, found 3.4 MB." (a
 *   mutation has been carried out by then, and the message says so). Over HTTP the serialized text is
 *   reused for the body (Yoga's `stringify`), so measuring costs no second serialization. Events
 *   of a subscription are not measured: their shape is bounded by the operation's limits.
 * - HTTP answers carrying a limit error get status 400, also for `Accept: application/json`
 *   (where Yoga would answer a parse or validation error with 200).
 *
 * @param options.isAuthenticated whether the operation's caller has a valid API key, given the
 *   context that parse and validate see (before execution) and the execution context; false
 *   selects the anonymous limits
 * @param options.introspection answer `__schema` and `__type` (GRAPHQL_INTROSPECTION)
 * Limits and units: Config['graphql']['limits'] (src/config.ts).
 */
export function useGraphQLLimits(options: {
  limits: Record<CallerTier, GraphQLLimits>;
  introspection: boolean;
  isAuthenticated(context: unknown): boolean;
}): Plugin {
  const tiers: Record<CallerTier, Tier> = {
    anonymous: createTier(options.limits.anonymous, options.introspection),
    authenticated: createTier(options.limits.authenticated, options.introspection),
  };
  const tierOf = (context: unknown): Tier => tiers[options.isAuthenticated(context) ? 'authenticated' : 'anonymous'];

  return {
    onParse({ context, params, setParsedDocument, setParseFn }) {
      const tier = tierOf(context);
      const text = typeof params.source === 'string' ? params.source : params.source.body;
      const cached = tier.documents.get(text);
      if (cached instanceof GraphQLError) throw cached;
      if (cached) {
        setParsedDocument(cached);
        return;
      }
      setParseFn(tier.parse);
      return ({ result }) => {
        if (result instanceof GraphQLError || (result && !(result instanceof Error))) tier.documents.set(text, result);
      };
    },

    onValidate({ context, params, addValidationRule, validateFn, setValidationFn, setResult }) {
      const tier = tierOf(context);
      const cached = tier.validations.get(params.documentAST);
      if (cached) {
        setResult([...cached] as GraphQLError[]);
        return;
      }
      for (const rule of tier.rules) addValidationRule(rule);
      // Armor's rules throw at the first limit (so that nothing else runs); that is an answer.
      setValidationFn((...args) => {
        try {
          return validateFn(...args);
        } catch (error) {
          if (isLimitExceededError(error)) return [error];
          throw error;
        }
      });
      return ({ result }) => {
        tier.validations.set(params.documentAST, result);
      };
    },

    onExecute({ args }) {
      const { maxResponseBytes } = tierOf(args.contextValue).limits;
      return {
        onExecuteDone({ result, setResult }) {
          if (isAsyncIterable(result)) return;
          const body = JSON.stringify(result);
          const bytes = Buffer.byteLength(body);
          if (bytes > maxResponseBytes) {
            const mutation = getOperationAST(args.document, args.operationName)?.operation === 'mutation';
            setResult({
              errors: [
                limitExceededError(
                  `Response size limit of ${size(maxResponseBytes)} exceeded, found ${size(bytes)}.` +
                    (mutation
                      ? ' The mutation was carried out; ask for fewer fields to see its result.'
                      : ' Ask for fewer fields or fewer items.'),
                ),
              ],
            });
            return;
          }
          // Yoga serializes a result with its `stringify` when it has one: reuse this text for
          // the unchanged result (errors make Yoga serialize a copy, which gets the default).
          Object.defineProperty(result, 'stringify', {
            value: (serialized: ExecutionResult) => (serialized === result ? body : JSON.stringify(serialized)),
            enumerable: false,
            configurable: true,
          });
        },
      };
    },

    onExecutionResult({ result, setResult }) {
      if (!result || isAsyncIterable(result) || Array.isArray(result)) return;
      if (!result.errors?.some(isLimitExceededError)) return;
      const extensions = (result.extensions ?? {}) as Record<string, any>;
      setResult({ ...result, extensions: { ...extensions, http: { ...extensions.http, status: LIMIT_STATUS } } });
    },
  };
}

/** A size for a message, 3 significant digits: "2 MB", "47.3 MB", "512 KB", "104 bytes" (1 MB = 1,048,576 bytes). */
function size(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Number((bytes / (1024 * 1024)).toPrecision(3))} MB`;
  if (bytes >= 1024) return `${Number((bytes / 1024).toPrecision(3))} KB`;
  return `${bytes} bytes`;
}
