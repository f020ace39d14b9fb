/**
 * `npm start` with no DATABASE_URL: embedded PostgreSQL under DATA_DIR, migrations, a development
 * account and its key printed once on the very first start; the CLI joins the running cluster;
 * SIGTERM stops everything; a restart keeps the data. Run as root (CI), this also proves the
 * embedded server runs as the `postgres` user.
 */
import { existsSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSignet, startService, type ServiceProcess } from './helpers/processes.ts';

let dataDir: string;
let service: ServiceProcess | undefined;

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-embedded-'));
  await fs.chmod(dataDir, 0o755);
});
afterAll(async () => {
  await service?.stop();
  await fs.rm(dataDir, { recursive: true, force: true });
});

describe('embedded PostgreSQL start', () => {
  let devKey: string;

  it('first start: creates the cluster, migrates, prints a development key once with a curl example', async () => {
    service = await startService({ DATA_DIR: dataDir });
    const output = service.output();
    const key = /^\s+(sgt_[A-Za-z0-9_-]{43})$/m.exec(output)?.[1];
    expect(key, output).toBeDefined();
    devKey = key!;
    expect(output).toContain(`curl -H "X-Auth-Token: ${devKey}" http://localhost:`);
    expect(output).toContain('/api/user');

    const response = await fetch(`${service.url}/api/user`, { headers: { 'X-Auth-Token': devKey } });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ email: 'dev@signet.local' });

    expect(existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true);
    if (process.getuid?.() === 0) {
      // PostgreSQL refuses to run as root: the cluster belongs to the postgres user.
      expect(statSync(path.join(dataDir, 'postgres')).uid).not.toBe(0);
    }
  });

  it('the CLI uses the running embedded cluster', async () => {
    const result = await runSignet(['account', 'create', '--name', 'Second', '--email', 'second@example.test'], { DATA_DIR: dataDir });
    expect(result.code, result.stderr).toBe(0);
    const created = JSON.parse(result.stdout);
    const response = await fetch(`${service!.url}/api/user`, { headers: { 'X-Auth-Token': created.apiKey } });
    expect(await response.json()).toMatchObject({ email: 'second@example.test' });
  });

  it('SIGTERM stops the service and the embedded PostgreSQL', async () => {
    expect(await service!.stop()).toBe(0);
    service = undefined;
    // PostgreSQL removes its pid file on a clean shutdown.
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it('restart keeps the data and prints no new key', async () => {
    service = await startService({ DATA_DIR: dataDir });
    expect(service.output()).not.toMatch(/sgt_/);
    const response = await fetch(`${service.url}/api/user`, { headers: { 'X-Auth-Token': devKey } });
    expect(response.status).toBe(200);
    expect(await service.stop()).toBe(0);
    service = undefined;
  });
});
