/**
 * Statements shared by the requests and jobs running at the same time (API key look-ups, webhook
 * dispatch and delivery bookkeeping): the requests made in one turn
 * of the event loop go to the database as one statement (DataLoader, scheduled with setImmediate,
 * i.e. once the I/O callbacks of the turn have run). Under load many callers share a statement
 * (and its commit); a caller alone waits for nothing. Each caller gets its own result (or the statement's
 * error); batch functions keep every row conditional on its own request. perClient keeps such
 * loaders (and per-pool caches) once per database client.
 */
import DataLoader from 'dataloader';

/** Requests in one statement at most. */
export const TURN_BATCH_MAX = 100;

/**
 * A loader whose `load(request)` resolves with `run`'s answer for that request, `run` getting all
 * the requests of the turn (at most TURN_BATCH_MAX, in call order; the same request may come
 * twice) and returning one answer per request, in order. Nothing is cached.
 */
export function turnBatch<K, V>(run: (requests: readonly K[]) => Promise<V[]>): DataLoader<K, V> {
  return new DataLoader<K, V>(run, {
    cache: false,
    maxBatchSize: TURN_BATCH_MAX,
    batchScheduleFn: (flush) => setImmediate(flush),
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
