/**
 * A connection taken from a `pg.Pool` for a run of statements (a transaction, a session advisory
 * lock), in one place so that every such run handles a lost connection the same way.
 *
 * pg's pool listens for a connection's 'error' only while the connection is idle; a connection
 * lent out by `pool.connect()` whose socket dies (the server restarted, `pg_terminate_backend`, a
 * network cut) emits 'error' with no listener, which Node throws as an uncaught exception: the
 * process dies, or a test run reports errors (test/database-outage.test.ts, the connections cut
 * while a fair claim held one). Here the lent connection has a listener for as long as it is out;
 * the statement in flight fails on its own (pg rejects it with the same error), and a lost
 * connection is closed rather than returned to the pool.
 */
import type pg from 'pg';

/**
 * Runs `run` with a connection of `pool` and gives the connection back after it, settled or not.
 * @param run gets the connection and `discard()`: call it when the connection must not be reused
 *   (a lock or a transaction may still be held on it); it is then closed instead of returned
 * @returns what `run` returned; rejects with its error, or with the pool's (no connection within
 *   the pool's connectionTimeoutMillis, the server unreachable)
 */
export async function withPoolClient<T>(
  pool: pg.Pool,
  run: (client: pg.PoolClient, discard: () => void) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let lost: Error | undefined;
  let discarded = false;
  // The error is the in-flight statement's too (pg rejects it); here it only marks the connection.
  const onError = (error: Error) => {
    lost ??= error;
  };
  client.on('error', onError);
  try {
    return await run(client, () => {
      discarded = true;
    });
  } finally {
    client.removeListener('error', onError);
    client.release(lost ?? discarded);
  }
}
