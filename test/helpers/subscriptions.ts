/**
 * GraphQL subscription clients for tests: graphql-ws over a real WebSocket (the `ws` package) and
 * SSE over fetch, each collecting results in a Feed to await one by one.
 */
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

/** A GraphQL result as sent over either transport. */
export interface SubscriptionResult {
  data?: any;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/** The results of one subscription, in order of arrival. */
export class Feed {
  private queue: SubscriptionResult[] = [];
  private waiters: { resolve: (r: SubscriptionResult) => void; reject: (e: unknown) => void }[] = [];
  /** Results taken or waiting, in all. */
  count = 0;
  done = false;
  failure: unknown;
  /** Stops listening (closes the subscription). */
  close: () => void = () => undefined;

  push(result: SubscriptionResult): void {
    this.count += 1;
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(result);
    else this.queue.push(result);
  }

  fail(error: unknown): void {
    this.failure = error;
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
  }

  complete(): void {
    this.done = true;
    for (const waiter of this.waiters.splice(0)) waiter.reject(new Error('the subscription completed'));
  }

  /** The next result; rejects when the subscription fails or completes first, or after timeoutMs. */
  next(timeoutMs = 15_000): Promise<SubscriptionResult> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    if (this.failure) return Promise.reject(this.failure);
    if (this.done) return Promise.reject(new Error('the subscription completed'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`no subscription result within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (result: SubscriptionResult) => {
        clearTimeout(timer);
        resolve(result);
      };
      this.waiters.push({
        resolve: done,
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
    });
  }

  /** The next result's data; fails on GraphQL errors. */
  async nextData(timeoutMs?: number): Promise<any> {
    const result = await this.next(timeoutMs);
    if (result.errors?.length) throw new Error(`subscription errors: ${JSON.stringify(result.errors)}`);
    return result.data;
  }
}

/** A graphql-ws client for `<url>/graphql`, the API key in connectionParams as `X-Auth-Token`. */
export function wsClient(url: string, apiKey?: string): Client {
  return createClient({
    url: `${url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: apiKey ? { 'X-Auth-Token': apiKey } : {},
    retryAttempts: 0,
    lazy: true,
  });
}

/** Subscribes over graphql-ws; the feed's close() unsubscribes. */
export function subscribeWs(client: Client, query: string, variables?: Record<string, unknown>): Feed {
  const feed = new Feed();
  feed.close = client.subscribe(
    { query, variables },
    {
      next: (result) => feed.push(result as SubscriptionResult),
      error: (error) => feed.fail(error),
      complete: () => feed.complete(),
    },
  );
  return feed;
}

/**
 * Subscribes over SSE: `POST <url>/graphql` with `Accept: text/event-stream` and the API key in
 * `X-Auth-Token`; resolves once the response headers are in. The feed's close() aborts the request.
 * @returns the feed and the response's status and content type
 */
export async function subscribeSse(
  url: string,
  apiKey: string | undefined,
  query: string,
  variables?: Record<string, unknown>,
): Promise<{ feed: Feed; status: number; contentType: string | null }> {
  const feed = new Feed();
  const abort = new AbortController();
  feed.close = () => abort.abort();
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: {
      accept: 'text/event-stream',
      'content-type': 'application/json',
      ...(apiKey ? { 'x-auth-token': apiKey } : {}),
    },
    body: JSON.stringify({ query, variables }),
    signal: abort.signal,
  });
  const contentType = response.headers.get('content-type');
  if (!response.body || !contentType?.includes('text/event-stream')) {
    const text = await response.text();
    feed.push(text ? (JSON.parse(text) as SubscriptionResult) : {});
    feed.complete();
    return { feed, status: response.status, contentType };
  }
  void (async () => {
    const decoder = new TextDecoder();
    let buffered = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffered += decoder.decode(chunk, { stream: true });
        for (let end = buffered.indexOf('\n\n'); end !== -1; end = buffered.indexOf('\n\n')) {
          const block = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          const event = /^event: ?(.*)$/m.exec(block)?.[1];
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trimStart())
            .join('\n');
          if (event === 'complete') feed.complete();
          else if (data) feed.push(JSON.parse(data) as SubscriptionResult);
        }
      }
      feed.complete();
    } catch (error) {
      if (abort.signal.aborted) feed.complete();
      else feed.fail(error);
    }
  })();
  return { feed, status: response.status, contentType };
}

/**
 * Resolves once `check` returns true (polled every 10 ms); rejects after timeoutMs. For waiting
 * until a subscription is listening on the server, which the protocols do not acknowledge.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
