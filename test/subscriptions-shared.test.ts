/**
 * useSharedSubscriptionResults (src/graphql/shared-subscription-results.ts) on a small graphql-js
 * schema: one execution per shared event for identical operations of one caller; separate
 * executions for another caller, other variables, another selection, or an event not marked as
 * shared; errors from the source stream pass through.
 */
import {
  GraphQLInt,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
  type ExecutionArgs,
  type ExecutionResult,
} from 'graphql';
import { Repeater } from 'graphql-yoga';
import { describe, expect, it } from 'vitest';
import { useSharedSubscriptionResults } from '../src/graphql/shared-subscription-results.ts';

interface Tick {
  n: number;
}

/** Every subscription's push function, to publish one event object to all of them. */
let pushes: ((tick: Tick) => void)[] = [];
let executions = 0;
const shared = new WeakSet<object>();

const TickType = new GraphQLObjectType<Tick>({
  name: 'Tick',
  fields: {
    n: { type: GraphQLInt },
    label: {
      type: GraphQLString,
      args: { prefix: { type: GraphQLString } },
      resolve: (tick, args: { prefix?: string }, ctx: { user: string }) => {
        executions += 1;
        return `${args.prefix ?? ''}${tick.n} for ${ctx.user}`;
      },
    },
  },
});

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLInt, resolve: () => 1 } } }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      ticks: {
        type: TickType,
        args: { fail: { type: GraphQLString } },
        subscribe: (_root, args: { fail?: string }) => {
          if (args.fail) throw new Error(args.fail);
          return new Repeater<Tick>((push) => {
            pushes.push((tick) => void push(tick));
          });
        },
        resolve: (tick: Tick) => tick,
      },
    },
  }),
});

/** The plugin's subscribe function. */
function sharedSubscribe(): (args: ExecutionArgs) => Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
  const plugin = useSharedSubscriptionResults<{ user: string }>({
    isShared: (event): event is object => typeof event === 'object' && event !== null && shared.has(event),
    callerKey: (ctx) => ctx.user,
  });
  let subscribe: any;
  plugin.onSubscribe!({ setSubscribeFn: (fn: unknown) => (subscribe = fn) } as never);
  return subscribe;
}

async function subscribeAll(specs: { query: string; user: string; variables?: Record<string, unknown> }[]) {
  const subscribe = sharedSubscribe();
  const streams: AsyncIterableIterator<ExecutionResult>[] = [];
  for (const spec of specs) {
    const stream = await subscribe({
      schema,
      document: parse(spec.query),
      contextValue: { user: spec.user },
      variableValues: spec.variables,
    });
    streams.push(stream as AsyncIterableIterator<ExecutionResult>);
  }
  return streams;
}

/** Publishes one tick (the same object to every subscription) and reads one result from each. */
async function publish(streams: AsyncIterableIterator<ExecutionResult>[], tick: Tick) {
  const pending = streams.map((s) => s.next());
  for (const push of pushes) push(tick);
  return (await Promise.all(pending)).map((r) => r.value);
}

describe('useSharedSubscriptionResults', () => {
  it('executes once per shared event for identical operations of one caller', async () => {
    pushes = [];
    executions = 0;
    const query = 'subscription { ticks { n label } }';
    const streams = await subscribeAll([
      { query, user: 'ada' },
      { query, user: 'ada' },
      { query, user: 'ada' },
    ]);
    const tick = { n: 1 };
    shared.add(tick);
    const results = await publish(streams, tick);
    expect(results).toEqual([0, 1, 2].map(() => ({ data: { ticks: { n: 1, label: '1 for ada' } } })));
    expect(executions).toBe(1);
    // The next event is executed again (results are per event).
    const second = { n: 2 };
    shared.add(second);
    expect((await publish(streams, second)).map((r) => r?.data?.ticks)).toEqual(
      [0, 1, 2].map(() => ({ n: 2, label: '2 for ada' })),
    );
    expect(executions).toBe(2);
    for (const s of streams) await s.return?.();
  });

  it(
    'executes apart for another caller, other variables, another selection, ' + 'or an event not marked shared',
    async () => {
      pushes = [];
      executions = 0;
      const streams = await subscribeAll([
        { query: 'subscription ($p: String) { ticks { label(prefix: $p) } }', user: 'ada', variables: { p: '#' } },
        { query: 'subscription ($p: String) { ticks { label(prefix: $p) } }', user: 'ada', variables: { p: 'No. ' } },
        { query: 'subscription ($p: String) { ticks { label(prefix: $p) } }', user: 'bob', variables: { p: '#' } },
        { query: 'subscription { ticks { n label } }', user: 'ada' },
      ]);
      const tick = { n: 7 };
      shared.add(tick);
      expect((await publish(streams, tick)).map((r) => r?.data?.ticks)).toEqual([
        { label: '#7 for ada' },
        { label: 'No. 7 for ada' },
        { label: '#7 for bob' },
        { n: 7, label: '7 for ada' },
      ]);
      expect(executions).toBe(4);
      // Not marked as shared: each subscription executes its own, even identical ones.
      pushes = [];
      executions = 0;
      const same = await subscribeAll([
        { query: 'subscription { ticks { label } }', user: 'ada' },
        { query: 'subscription { ticks { label } }', user: 'ada' },
      ]);
      expect((await publish(same, { n: 8 })).map((r) => r?.data?.ticks)).toEqual([
        { label: '8 for ada' },
        { label: '8 for ada' },
      ]);
      expect(executions).toBe(2);
      for (const s of [...streams, ...same]) await s.return?.();
    },
  );

  it('returns the error of a subscription that cannot start', async () => {
    const subscribe = sharedSubscribe();
    const result = (await subscribe({
      schema,
      document: parse('subscription { ticks(fail: "nope") { n } }'),
      contextValue: { user: 'ada' },
    })) as ExecutionResult;
    expect(result.errors?.[0]?.message).toBe('nope');
  });
});
