/**
 * Ending GraphQL connections whose credential is revoked (src/accounts/credential-sessions.ts):
 * - graphql-ws: the WebSocket is closed with 4403 "Forbidden" (graphql-ws's CloseCode.Forbidden,
 *   which its clients do not retry), ending every operation on it;
 * - SSE (subscriptions over HTTP): the stream ends (`event: complete`) and the response closes.
 * Queries and mutations over HTTP need nothing: each request authenticates anew.
 */
import type { Plugin } from 'graphql-yoga';
import { isAsyncIterable, Repeater } from 'graphql-yoga';
import type { WebSocket } from 'ws';
import type { Viewer } from '../accounts/authenticate.ts';
import type { CredentialSessions } from '../accounts/credential-sessions.ts';

/** graphql-ws's close code for "Forbidden" (CloseCode.Forbidden). */
export const WS_CLOSE_FORBIDDEN = 4403;
const WS_CLOSE_REASON = 'Forbidden: the API key no longer authenticates';

/** Sockets tracked already (a connection authenticates each operation with the same parameters). */
const trackedSockets = new WeakSet<WebSocket>();

/**
 * Tracks a graphql-ws connection under the credential its operation authenticated with (call on
 * each operation; the first one with a viewer counts). Closes the socket with 4403 on revocation.
 */
export function trackWebSocket(sessions: CredentialSessions, socket: WebSocket, viewer: Viewer | null): void {
  if (!viewer || trackedSockets.has(socket)) return;
  trackedSockets.add(socket);
  const untrack = sessions.track(viewer, () => socket.close(WS_CLOSE_FORBIDDEN, WS_CLOSE_REASON));
  socket.once('close', untrack);
}

/**
 * A Yoga plugin: a subscription over HTTP (SSE) whose caller's credential is revoked ends.
 * Subscriptions over graphql-ws are left to trackWebSocket (their socket closes with 4403).
 */
export function useCredentialRevocation(sessions: CredentialSessions): Plugin<Record<string, unknown>> {
  return {
    onSubscribe({ args }) {
      const context = args.contextValue as { viewer?: Viewer | null; request?: unknown };
      const viewer = context.viewer;
      if (!viewer || context.request === undefined) return;
      return {
        onSubscribeResult({ result, setResult }) {
          if (isAsyncIterable(result)) setResult(endOnRevocation(result, (end) => sessions.track(viewer, end)));
        },
      };
    },
  };
}

/** `source`, until it ends by itself, its consumer stops, or `track`'s `end` is called. */
function endOnRevocation<T>(source: AsyncIterable<T>, track: (end: () => void) => () => void): Repeater<T> {
  return new Repeater<T>(async (push, stop) => {
    const iterator = source[Symbol.asyncIterator]();
    const untrack = track(() => stop());
    const stopped = stop.then(() => undefined);
    try {
      for (;;) {
        const next = await Promise.race([iterator.next(), stopped]);
        if (!next || next.done) break;
        await push(next.value);
      }
    } finally {
      untrack();
      stop();
      await iterator.return?.();
    }
  });
}
