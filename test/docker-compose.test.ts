/**
 * docker-compose.yml cannot run on our machines (no Docker engine), so its configuration is
 * checked here: the signet service's environment is one src/config.ts accepts, it reaches the
 * postgres service, publishes its PORT and waits for PostgreSQL to be healthy; the image runs
 * the same command as `npm start`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../src/config.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

interface Service {
  build?: unknown;
  image?: string;
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: (string | number | { target: number; published?: number | string })[];
  volumes?: (string | { type?: string; source?: string; target: string })[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[] };
}

/** Compose interpolation of `${NAME:-default}` / `${NAME-default}` / `${NAME}` with an empty host environment. */
function interpolate(value: string): string {
  return value.replace(
    /\$\{([A-Z_][A-Z0-9_]*)(?::?-([^}]*))?\}/gi,
    (_match, _name: string, fallback?: string) => fallback ?? '',
  );
}

/** A service's environment as a plain map (compose allows a map or a list of NAME=value). */
function environmentOf(service: Service): Record<string, string> {
  const entries = Array.isArray(service.environment)
    ? service.environment.map((line) => {
        const at = line.indexOf('=');
        return at === -1 ? [line, ''] : [line.slice(0, at), line.slice(at + 1)];
      })
    : Object.entries(service.environment ?? {}).map(([key, value]) => [key, value == null ? '' : String(value)]);
  return Object.fromEntries(entries.map(([key, value]) => [key, interpolate(value!)]));
}

/** The variable names src/config.ts reads: the keys of its `EnvSchema = z.object({...})`. */
function configVariables(): string[] {
  const source = read('src/config.ts');
  const start = source.indexOf('const EnvSchema = z.object({');
  expect(start, 'src/config.ts no longer declares `const EnvSchema = z.object({`').toBeGreaterThanOrEqual(0);
  const block = source.slice(start, source.indexOf('\n});', start));
  return [...block.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!);
}

/** Container port of a compose port entry ("3000", "3000:3000", "127.0.0.1:8080:3000/tcp" or long form). */
function containerPort(entry: NonNullable<Service['ports']>[number]): number {
  if (typeof entry === 'object') return entry.target;
  const last = String(entry).split(':').at(-1)!;
  return Number(last.replace(/\/(tcp|udp)$/, ''));
}

const compose = parse(read('docker-compose.yml')) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const { signet, postgres } = compose.services;

describe('docker-compose.yml', () => {
  it('has the signet (built here), postgres and redis services', () => {
    expect(signet?.build).toBeDefined();
    expect(postgres?.image).toMatch(/^postgres:/);
    expect(compose.services.redis?.image).toMatch(/^redis:/);
  });

  it('gives signet only variables src/config.ts reads, and values loadConfig accepts', () => {
    const known = configVariables();
    expect(known).toEqual(expect.arrayContaining(['DATABASE_URL', 'PORT', 'DATA_DIR', 'APP_URL']));
    const env = environmentOf(signet!);
    expect(Object.keys(env).filter((key) => !known.includes(key))).toEqual([]);
    expect(() => loadConfig(env)).not.toThrow();
  });

  it('points DATABASE_URL at the postgres service, its user, password and database', () => {
    const config = loadConfig(environmentOf(signet!));
    expect(config.databaseUrl).toBeDefined();
    const url = new URL(config.databaseUrl!);
    expect(url.protocol).toMatch(/^postgres(ql)?:$/);
    expect(url.hostname).toBe('postgres');
    expect(url.port || '5432').toBe('5432');
    const database = url.pathname.replace(/^\//, '');
    expect(database).not.toBe('');

    const pgEnv = environmentOf(postgres!);
    expect(database).toBe(pgEnv.POSTGRES_DB ?? pgEnv.POSTGRES_USER ?? 'postgres');
    expect(decodeURIComponent(url.username)).toBe(pgEnv.POSTGRES_USER ?? 'postgres');
    expect(decodeURIComponent(url.password)).toBe(pgEnv.POSTGRES_PASSWORD);
  });

  it('publishes the port signet listens on (PORT)', () => {
    const config = loadConfig(environmentOf(signet!));
    expect(signet!.ports?.length).toBeGreaterThan(0);
    for (const entry of signet!.ports!) expect(containerPort(entry)).toBe(config.port);
  });

  it('creates no development account, so no working key lands in the logs, and says how to make one', () => {
    expect(loadConfig(environmentOf(signet!)).createDevAccount).toBe(false);
    expect(read('docker-compose.yml')).toContain('docker compose exec signet npx signet account create');
  });

  it('keeps DATA_DIR on a named volume', () => {
    const env = environmentOf(signet!);
    const mount = signet!.volumes?.find((v) => (typeof v === 'string' ? v.split(':')[1] : v.target) === env.DATA_DIR);
    expect(mount, `no volume mounted at DATA_DIR=${env.DATA_DIR}`).toBeDefined();
    const source = typeof mount === 'string' ? mount.split(':')[0]! : mount!.source!;
    expect(Object.keys(compose.volumes ?? {})).toContain(source);
  });

  it('starts signet only once postgres is healthy (pg_isready)', () => {
    const dependsOn = signet!.depends_on;
    expect(Array.isArray(dependsOn) ? undefined : dependsOn?.postgres?.condition).toBe('service_healthy');
    expect([postgres!.healthcheck?.test].flat().join(' ')).toContain('pg_isready');
  });

  it('converts HTML and DOCX with the gotenberg service (Gotenberg 8, JavaScript off)', () => {
    const gotenberg = compose.services.gotenberg as (Service & { command?: string[] }) | undefined;
    expect(gotenberg?.image).toMatch(/^gotenberg\/gotenberg:8/);
    expect(gotenberg?.command).toContain('--chromium-disable-javascript=true');
    const config = loadConfig(environmentOf(signet!));
    expect(new URL(config.gotenbergUrl!).hostname).toBe('gotenberg');
    // Gotenberg listens on 3000 inside its container.
    expect(new URL(config.gotenbergUrl!).port).toBe('3000');
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');

  it('installs with npm ci on node:20-bookworm-slim', () => {
    expect(dockerfile).toMatch(/^FROM node:20-bookworm-slim\b/m);
    expect(dockerfile).toMatch(/^RUN npm ci\b/m);
  });

  it('builds and runs what `npm start` does', () => {
    // "node scripts/build.mjs && NODE_ENV=${NODE_ENV:-production} exec node ... dist/main.mjs":
    // the image builds at build time, sets the same NODE_ENV and runs the exec'd command
    // directly, so SIGTERM reaches node.
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start;
    // (The step between them picks LOG_FORMAT for a terminal: the image's logs are JSON lines.)
    const steps = start.split(' && ');
    const [build, run] = [steps[0], steps.at(-1)!];
    expect(dockerfile).toContain(`RUN ${build}`);
    const [, nodeEnv, exec] = /^NODE_ENV=\$\{NODE_ENV:-(\w+)\} (exec .*)$/.exec(run) ?? [];
    expect(dockerfile).toMatch(new RegExp(`^ENV .*\\bNODE_ENV=${nodeEnv}\\b`, 'm'));
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(cmd, 'Dockerfile has no exec-form CMD').toBeDefined();
    expect(`exec ${(JSON.parse(cmd!) as string[]).join(' ')}`).toBe(exec);
  });
});
