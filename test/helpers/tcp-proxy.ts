/**
 * A TCP proxy on loopback between the service and PostgreSQL, to take the database away the way
 * an outage does: connections refused (the server is down), or accepted and dropped at once (a
 * load balancer with no backend), or accepted and never answered (a network black hole), and
 * the open connections cut. `restore()` brings it back on the same port.
 */
import net from 'node:net';

/** What a new connection meets while the database is away. */
export type OutageMode = 'refuse' | 'drop' | 'hang';

export interface TcpProxy {
  /** 127.0.0.1 port the proxy listens on. */
  port: number;
  /** `target` with the proxy's host and port: a postgresql:// URL through the proxy. */
  url(target: string): string;
  /** Connections forwarded so far (for tests that check the service went through the proxy). */
  readonly connections: number;
  /** Cuts every open connection and meets new ones per `mode` until restore(). */
  cut(mode: OutageMode): Promise<void>;
  /** Forwards new connections again (listening again on the same port after `refuse`). */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts a proxy on a free 127.0.0.1 port forwarding to `target` (host:port).
 * @param target.host default 127.0.0.1
 */
export async function startTcpProxy(target: { host?: string; port: number }): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  let mode: 'up' | OutageMode = 'up';
  let connections = 0;

  const server = net.createServer((client) => {
    open.add(client);
    client.once('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    if (mode === 'drop') {
      client.destroy();
      return;
    }
    if (mode === 'hang') return;
    connections += 1;
    const upstream = net.connect({ host: target.host ?? '127.0.0.1', port: target.port });
    open.add(upstream);
    upstream.once('close', () => {
      open.delete(upstream);
      client.destroy();
    });
    client.once('close', () => upstream.destroy());
    upstream.on('error', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;

  const cutAll = () => {
    for (const socket of open) socket.destroy();
    open.clear();
  };

  return {
    port,
    get connections() {
      return connections;
    },
    url(targetUrl) {
      const url = new URL(targetUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    async cut(next) {
      mode = next;
      // close() stops listening at once, and calls back once the open connections are gone.
      const closed =
        next === 'refuse' && server.listening
          ? new Promise<void>((resolve) => server.close(() => resolve()))
          : undefined;
      cutAll();
      await closed;
      if (next !== 'refuse' && !server.listening) await listen(port);
    },
    async restore() {
      mode = 'up';
      if (!server.listening) await listen(port);
    },
    async close() {
      mode = 'drop';
      cutAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
