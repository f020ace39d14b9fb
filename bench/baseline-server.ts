/**
 * Benchmark baseline: the least a Node server can do to answer `GET /api/user` — `node:http` and
 * one `pg` query, no framework, no GraphQL, no ORM. bench/run.ts compares Signet against it.
 *
 * Same rule as src/accounts/authenticate.ts: the key is looked up by the hex SHA-256 of the
 * `X-Auth-Token` header (or `Authorization: Bearer`), and refused when it is revoked or its user
 * or account is archived. Unlike Signet it never writes `last_used_at` (Signet does so at most
 * once a minute per key, which is negligible here).
 *
 * Env: DATABASE_URL (required), PORT (default 0 = any free port), POOL_SIZE (default 10).
 * Prints `LISTENING http://127.0.0.1:<port>` on stdout once ready; SIGTERM closes it.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';

const USER_BY_TOKEN_HASH = `
  SELECT u.id, u.first_name, u.last_name, u.email
    FROM api_keys k
    JOIN users u ON u.id = k.user_id
    JOIN accounts a ON a.id = u.account_id
   WHERE k.token_hash = $1
     AND k.revoked_at IS NULL
     AND u.archived_at IS NULL
     AND a.archived_at IS NULL`;

const connectionString = process.env.DATABASE_URL;
if (!connectionString) {
  process.stderr.write('baseline-server: DATABASE_URL is required\n');
  process.exit(2);
}
const pool = new pg.Pool({ connectionString, max: Number(process.env.POOL_SIZE ?? 10) });
pool.on('error', () => {}); // an idle client dropping must not crash the baseline

const NOT_AUTHENTICATED = JSON.stringify({ error: 'Not authenticated' });

function tokenOf(request: http.IncomingMessage): string | undefined {
  const direct = request.headers['x-auth-token'];
  const value = (Array.isArray(direct) ? direct[0] : direct)?.trim();
  if (value) return value;
  const match = /^Bearer\s+(.+)$/i.exec(request.headers.authorization?.trim() ?? '');
  return match?.[1]?.trim() || undefined;
}

function reply(response: http.ServerResponse, status: number, body: string): void {
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}

async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  if (request.method !== 'GET' || request.url !== '/api/user') return reply(response, 404, '{"status":404}');
  const token = tokenOf(request);
  if (!token || token.length > 512) return reply(response, 401, NOT_AUTHENTICATED);
  const tokenHash = createHash('sha256').update(token, 'utf8').digest('hex');
  const { rows } = await pool.query(USER_BY_TOKEN_HASH, [tokenHash]);
  if (rows.length === 0) return reply(response, 401, NOT_AUTHENTICATED);
  const { id, first_name, last_name, email } = rows[0];
  reply(response, 200, JSON.stringify({ id, first_name, last_name, email }));
}

const server = http.createServer((request, response) => {
  handle(request, response).catch((error) => {
    process.stderr.write(`baseline-server: ${error instanceof Error ? error.message : String(error)}\n`);
    if (!response.headersSent) reply(response, 500, '{"status":500}');
  });
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`LISTENING http://127.0.0.1:${port}\n`);
});

process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  pool.end().finally(() => process.exit(0));
});
