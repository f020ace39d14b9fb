/**
 * Fan-out of one live event to many GraphQL subscribers: subscribers of one account that run the
 * same subscription operation (same document, operation name and variables) get the same result
 * for the same event, so it is executed once per event and shared, instead of once per
 * subscriber (bench/subscriptions.ts measures it).
 *
 * An envelop plugin: it replaces the subscribe step with the same two steps graphql-js takes
 * (createSourceEventStream, then execute per event), the execute step going through a per-event
 * cache. Only events that `isShared` accepts (the LiveEvent objects of src/events/pubsub.ts, one
 * object per published event and instance) are shared, only between callers with the same
 * `callerKey` (account and user), and only while the event object is alive (a WeakMap).
 */
import {
  createSourceEventStream,
  execute,
  print,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
} from 'graphql';
import { isAsyncIterable, map, type Plugin } from 'graphql-yoga';

export interface SharedSubscriptionResultsOptions<Context> {
  /** Whether a source event may share its results (it is one object seen by every subscriber). */
  isShared(event: unknown): event is object;
  /** Who the result is for; undefined: never shared (e.g. no authenticated caller). */
  callerKey(context: Context): string | undefined;
}

/**
 * @returns a Yoga/envelop plugin; results of subscriptions whose events are not shared are
 *   executed per subscriber, as without it
 */
export function useSharedSubscriptionResults<Context>(
  options: SharedSubscriptionResultsOptions<Context>,
): Plugin<Record<string, unknown>> {
  const documentKeys = new WeakMap<DocumentNode, string>();
  const results = new WeakMap<object, Map<string, Promise<ExecutionResult>>>();
  const documentKey = (document: DocumentNode) => {
    let key = documentKeys.get(document);
    if (key === undefined) documentKeys.set(document, (key = print(document)));
    return key;
  };

  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(async (args: ExecutionArgs) => {
        const stream = await createSourceEventStream(args);
        if (!isAsyncIterable(stream)) return stream;
        const caller = options.callerKey(args.contextValue as Context);
        const operationKey =
          caller === undefined
            ? undefined
            : `${caller}\n${args.operationName ?? ''}\n${JSON.stringify(args.variableValues ?? {})}\n` +
              `${documentKey(args.document)}`;
        return map((event: unknown) => {
          const run = () => execute({ ...args, rootValue: event }) as Promise<ExecutionResult> | ExecutionResult;
          if (operationKey === undefined || !options.isShared(event)) return run();
          let byOperation = results.get(event);
          if (!byOperation) results.set(event, (byOperation = new Map()));
          let result = byOperation.get(operationKey);
          if (!result) byOperation.set(operationKey, (result = Promise.resolve(run())));
          return result;
        })(stream as AsyncIterable<unknown>);
      });
    },
  };
}
