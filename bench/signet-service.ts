/**
 * Signet as `npm start` runs it (scripts/build.mjs → `node dist/main.mjs`, NODE_ENV=production) on
 * a bench database and a temporary DATA_DIR, on a free loopback port, and a client for its REST
 * API. Used by the signing form's weight bench (bench/signing-form-weight.ts) and the form's
 * screenshots (scripts/form-screenshots.ts); everything it starts is undone by the bench clean-ups
 * (bench/cleanup.ts).
 */
import { tempDir, onCleanup } from './cleanup.ts';
import { buildService, childEnv, freePort, spawnNode, stopChild, waitHealthy, type NodeChild } from './processes.ts';

export interface SignetService {
  child: NodeChild;
  /** `http://127.0.0.1:<port>`, also the service's APP_URL. */
  url: string;
  /** The REST API (`/api` + path) with the bench account's key: the parsed JSON; throws on a non-200. */
  api(method: string, path: string, body?: unknown): Promise<any>;
}

/**
 * Builds and starts the service; resolves once `GET /health` answers 200.
 * @param options.databaseUrl a migrated database (bench/bench-database.ts)
 * @param options.apiKey the key `api()` sends (x-auth-token)
 * @param options.env more configuration (e.g. EMBED_ORIGINS)
 * @throws when the service exits or is not healthy within 60 s
 */
export async function startSignetService(options: {
  databaseUrl: string;
  apiKey: string;
  env?: Record<string, string>;
}): Promise<SignetService> {
  const dataDir = await tempDir('signet-bench-data-');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  buildService();
  const child = spawnNode(
    'dist/main.mjs',
    childEnv({
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      CREATE_DEV_ACCOUNT: 'false',
      DATABASE_URL: options.databaseUrl,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      APP_URL: url,
      ...options.env,
    }),
  );
  onCleanup(`stop Signet (pid ${child.pid})`, async () => {
    await stopChild(child);
  });
  await waitHealthy(child, url, performance.now(), 60_000);
  const api = async (method: string, path: string, body?: unknown): Promise<any> => {
    const response = await fetch(`${url}/api${path}`, {
      method,
      headers: { 'x-auth-token': options.apiKey, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    if (response.status !== 200)
      throw new Error(`${method} /api${path} answered ${response.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text);
  };
  return { child, url, api };
}
