/**
 * Statements shared by the requests and jobs running at the same time (API key look-ups, webhook
 * dispatch and delivery bookkeeping): the requests made in one turn
 * of the event loop go to the database as one statement (DataLoader, scheduled with setImmediate,
 * i.e. once the I/O callbacks of the turn have run). Under load many callers share a statement
 * (and its commit); a caller alone waits for nothing. Each caller gets its own result (or the statement's
 * error); batch functions keep every row conditional on its own request. perClient keeps such
 * loaders (and per-pool caches) once per database client. The one batching helper of the
 * service's SQL: statements that batch use turnBatch, with a delay where a few milliseconds of
 * waiting buy a shared statement (the job store's end-of-run saves).
 */
import DataLoader from 'dataloader';

/** Requests in one statement at most. */
export const TURN_BATCH_MAX = 100;

/** A turnBatch loader: DataLoader's `load`, and `flush()` to send what waits now. */
export type TurnBatch<K, V> = DataLoader<K, V> & {
  /** Sends the batches still waiting for their time now; resolves once every batch sent has settled. */
  flush(): Promise<void>;
};

/**
 * A loader whose `load(request)` resolves with `run`'s answer for that request, `run` getting all
 * the requests of the turn (at most `options.max`, default TURN_BATCH_MAX, in call order; the same
 * request may come twice) and returning one answer per request, in order; a failure of `run`
 * fails every request of its batch. Nothing is cached. This is the one batching helper of the
 * service's SQL (API keys, webhooks, the job store's inserts and state saves).
 * @param options.delayMs how long a batch stays open after its first request, in milliseconds:
 *   0 (default) = until the I/O callbacks of this turn have run (setImmediate)
 */
export function turnBatch<K, V>(
  run: (requests: readonly K[]) => Promise<V[]>,
  options: { delayMs?: number; max?: number } = {},
): TurnBatch<K, V> {
  const delayMs = options.delayMs ?? 0;
  // Batches scheduled and not sent yet (flush sends them), and batches sent and not settled.
  const waiting = new Set<() => void>();
  const sent = new Set<Promise<unknown>>();
  const loader = new DataLoader<K, V>(
    (requests) => {
      const result = run(requests);
      sent.add(result);
      void result.then(
        () => sent.delete(result),
        () => sent.delete(result),
      );
      return result;
    },
    {
      cache: false,
      maxBatchSize: options.max ?? TURN_BATCH_MAX,
      batchScheduleFn: (dispatch) => {
        const send = () => {
          if (!waiting.delete(send)) return; // sent already (by flush)
          dispatch();
        };
        waiting.add(send);
        if (delayMs > 0) setTimeout(send, delayMs);
        else setImmediate(send);
      },
    },
  );
  return Object.assign(loader, {
    async flush() {
      for (const send of [...waiting]) send();
      await Promise.allSettled([...sent]);
    },
  });
}

/**
 * `make(client)` once per client object (a Db or its pg pool), kept as long as the client lives:
 * the batched statements and caches that belong to one database connection pool.
 */
export function perClient<C extends object, V>(make: (client: C) => V): (client: C) => V {
  const made = new WeakMap<C, V>();
  return (client) => {
    let value = made.get(client);
    if (value === undefined) {
      value = make(client);
      made.set(client, value);
    }
    return value;
  };
}
