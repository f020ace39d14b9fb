/**
 * A PostgreSQL wire-protocol proxy on 127.0.0.1 that records every statement its clients send,
 * for counting SQL statements per request (bench/submissions.ts). Bytes are forwarded unchanged
 * in both directions; the client→server stream is parsed alongside:
 * - a simple-protocol `Query` ('Q') is one statement (its text as sent);
 * - in the extended protocol, each `Execute` ('E') is one statement run: the text comes from the
 *   `Parse` ('P') of the prepared statement its portal was bound to (`Bind`, 'B'), so a named
 *   statement prepared once per connection (src/accounts/authenticate.ts) counts on every run.
 * This counts exactly what the server is asked to run, whatever pool or library sends it, with
 * no server setting (pg_stat_statements, log_statement) needed.
 *
 * Each connection is classified from its StartupMessage: `options` containing
 * `search_path=agenda` is the job store's pool (src/jobs/job-store.ts), anything else the
 * service's own pool (Prisma and the plain-SQL hot paths). Not for TLS: an SSLRequest is passed on
 * and a server answering 'S' would make the stream unreadable (loopback PostgreSQL answers 'N').
 */
import net from 'node:net';

export type PoolKind = 'service' | 'jobs';

export interface RecordedStatement {
  /** performance.now() when the message was seen. */
  at: number;
  connection: number;
  pool: PoolKind;
  text: string;
}

export interface StatementProxy {
  /** postgresql:// URL like `targetUrl` but through the proxy. */
  url: string;
  /** Every statement so far, in arrival order (clear with `statements.length = 0`). */
  statements: RecordedStatement[];
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;

/**
 * Starts the proxy in front of the server of `targetUrl` (host and port; loopback, no TLS).
 * @returns its URL (same user, password and database as `targetUrl`)
 */
export async function startStatementProxy(targetUrl: string): Promise<StatementProxy> {
  const target = new URL(targetUrl);
  const targetHost = target.hostname || '127.0.0.1';
  const targetPort = Number(target.port || 5432);
  const statements: RecordedStatement[] = [];
  const sockets = new Set<net.Socket>();
  let nextConnection = 1;

  const server = net.createServer((client) => {
    const id = nextConnection++;
    const upstream = net.connect(targetPort, targetHost);
    sockets.add(client).add(upstream);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const parser = createClientParser((text) =>
      statements.push({ at: performance.now(), connection: id, pool: parser.pool, text }),
    );
    client.on('data', (chunk: Buffer) => {
      parser.push(chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    statements,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Parses a client→server byte stream into statements (see the module comment). */
function createClientParser(onStatement: (text: string) => void) {
  let buffer: Buffer = Buffer.alloc(0);
  let startupDone = false;
  const prepared = new Map<string, string>();
  const portals = new Map<string, string>();
  const state = {
    pool: 'service' as PoolKind,
    push(chunk: Buffer) {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      for (;;) {
        if (!startupDone) {
          if (buffer.length < 8) return;
          const length = buffer.readInt32BE(0);
          if (buffer.length < length) return;
          const code = buffer.readInt32BE(4);
          if (code !== SSL_REQUEST && code !== GSSENC_REQUEST && code !== CANCEL_REQUEST) {
            startupDone = true;
            const parameters = buffer.subarray(8, length).toString('utf8').split('\0');
            for (let i = 0; i + 1 < parameters.length; i += 2) {
              if (parameters[i] === 'options' && /search_path=agenda\b/.test(parameters[i + 1]!)) state.pool = 'jobs';
            }
          }
          buffer = buffer.subarray(length);
          continue;
        }
        if (buffer.length < 5) return;
        const type = String.fromCharCode(buffer[0]!);
        const length = buffer.readInt32BE(1);
        if (buffer.length < 1 + length) return;
        const body = buffer.subarray(5, 1 + length);
        buffer = buffer.subarray(1 + length);
        handle(type, body);
      }
    },
  };

  const cString = (body: Buffer, offset: number): [string, number] => {
    const end = body.indexOf(0, offset);
    return [body.toString('utf8', offset, end), end + 1];
  };

  function handle(type: string, body: Buffer) {
    switch (type) {
      case 'Q': {
        onStatement(cString(body, 0)[0]);
        break;
      }
      case 'P': {
        const [name, next] = cString(body, 0);
        prepared.set(name, cString(body, next)[0]);
        break;
      }
      case 'B': {
        const [portal, next] = cString(body, 0);
        portals.set(portal, prepared.get(cString(body, next)[0]) ?? '<unknown prepared statement>');
        break;
      }
      case 'E': {
        onStatement(portals.get(cString(body, 0)[0]) ?? '<unknown portal>');
        break;
      }
      case 'C': {
        // Close: 'S' statement or 'P' portal.
        const [name] = cString(body, 1);
        (body[0] === 0x53 ? prepared : portals).delete(name);
        break;
      }
    }
  }
  return state;
}
