/**
 * docker-compose.yml cannot run on our machines (no Docker engine), so its configuration is
 * checked here: the signet service's environment is one src/config.ts accepts, it reaches the
 * postgres service, publishes its PORT and waits for PostgreSQL to be healthy; the image runs
 * the same command as `npm start`. The profiles (issue 18: mongo, mailpit, minio, scale): each
 * service's healthcheck, ports, volumes and dependencies, and the settings of each deploy/*.env
 * against src/config.ts and the services they name; the Dockerfile's stages. Where a Docker
 * engine exists, `docker compose config` checks the file too.
 */
import { execFileSync } from 'node:child_process';
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
  depends_on?: string[] | Record<string, { condition?: string; required?: boolean }>;
  healthcheck?: { test?: string | string[] };
  profiles?: string[];
  command?: string[];
  entrypoint?: string[];
}

/**
 * Compose interpolation of `${NAME:-default}` / `${NAME-default}` / `${NAME}` with the variables
 * given (an env file's), empty otherwise.
 */
function interpolate(value: string, vars: Record<string, string> = {}): string {
  return value.replace(
    /\$\{([A-Z_][A-Z0-9_]*)(?::?-([^}]*))?\}/gi,
    (_match, name: string, fallback?: string) => vars[name] || fallback || '',
  );
}

/** A service's environment as a plain map (compose allows a map or a list of NAME=value). */
function environmentOf(service: Service, vars: Record<string, string> = {}): Record<string, string> {
  const entries = Array.isArray(service.environment)
    ? service.environment.map((line) => {
        const at = line.indexOf('=');
        return at === -1 ? [line, ''] : [line.slice(0, at), line.slice(at + 1)];
      })
    : Object.entries(service.environment ?? {}).map(([key, value]) => [key, value == null ? '' : String(value)]);
  return Object.fromEntries(entries.map(([key, value]) => [key, interpolate(value!, vars)]));
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

// `<<: *signet` merges the shared service definition, as Compose does (YAML 1.1 merge keys).
const compose = parse(read('docker-compose.yml'), { merge: true }) as {
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

  /** The stages in order: name → their lines. */
  const stages = dockerfile
    .split(/^(?=FROM )/m)
    .filter((part) => part.startsWith('FROM '))
    .map((part) => ({
      from: /^FROM (\S+) AS (\S+)/.exec(part)?.[1],
      name: /^FROM \S+ AS (\S+)/.exec(part)?.[1],
      part,
    }));
  const stage = (name: string) => stages.find((s) => s.name === name)!.part;

  it('builds in stages on one pinned Node version: build, runtime, full, and slim last (the default target)', () => {
    expect(stages.map((s) => s.name)).toEqual(['build', 'runtime', 'full', 'slim']);
    expect(dockerfile).toMatch(/^ARG NODE_VERSION=\d+\.\d+\.\d+$/m);
    // The Dockerfile's own ${NODE_VERSION}, as written there (not a template string).
    const base = 'node:$' + '{NODE_VERSION}-bookworm-slim';
    expect(stages.map((s) => s.from)).toEqual([base, base, 'runtime', 'runtime']);
    expect(stage('build')).toMatch(/^RUN npm ci$/m);
    // Only production dependencies reach the image.
    expect(stage('build')).toMatch(/^RUN npm prune --omit=dev\b/m);
    expect(stage('runtime')).toMatch(/^COPY --from=build \/app \/app$/m);
  });

  it('runs as the unprivileged node user with a healthcheck on /health', () => {
    expect(stage('runtime')).toMatch(/^USER node$/m);
    expect(stage('runtime')).not.toMatch(/^RUN npm\b/m);
    // full installs as root, then drops back to node.
    expect([...stage('full').matchAll(/^USER (\S+)$/gm)].map((m) => m[1])).toEqual(['root', 'node']);
    const healthcheck = /^HEALTHCHECK (.*\\\n)*.*$/m.exec(stage('runtime'))?.[0];
    expect(healthcheck).toMatch(/CMD \["node", "-e", ".*\/health`?\)/);
    expect(stage('runtime')).toMatch(/^ENV .*\bHOST=0\.0\.0\.0\b/m);
    expect(stage('runtime')).toMatch(/^ENV .*\bDATA_DIR=\/data\b/m);
  });

  it('has Chromium and LibreOffice in the full target only', () => {
    expect(stage('full')).toMatch(/chromium libreoffice-writer-nogui fonts-dejavu-core/);
    expect(stage('runtime')).not.toMatch(/chromium|libreoffice/);
    expect(stage('slim').trim()).toBe('FROM runtime AS slim');
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

/** A deploy/<profile>.env file's variables (NAME=value lines; # comments). */
function envFile(name: string): Record<string, string> {
  return Object.fromEntries(
    read(`deploy/${name}.env`)
      .split('\n')
      .filter((line) => line.trim() && !line.trimStart().startsWith('#'))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

const services = compose.services as Record<string, Service & { image?: string; ports?: Service['ports'] }>;
const PROFILES = {
  mongo: ['mongo'],
  mailpit: ['mailpit'],
  minio: ['minio', 'minio-bucket'],
  scale: ['signet-2', 'proxy'],
};

describe('docker-compose.yml profiles', () => {
  it('keeps the default small: only signet, postgres, gotenberg and redis run without a profile', () => {
    const always = Object.entries(services).filter(([, s]) => !s.profiles?.length);
    expect(always.map(([name]) => name).sort()).toEqual(['gotenberg', 'postgres', 'redis', 'signet']);
    for (const [profile, names] of Object.entries(PROFILES))
      for (const name of names) expect(services[name]?.profiles, name).toEqual([profile]);
    expect(Object.keys(services).sort()).toEqual(
      ['gotenberg', 'postgres', 'redis', 'signet', ...Object.values(PROFILES).flat()].sort(),
    );
  });

  it('pins every image and gives every long-running service a healthcheck', () => {
    for (const [name, service] of Object.entries(services)) {
      if (service.build) continue;
      expect(service.image, name).toMatch(/^[a-z0-9./-]+:[\w.-]+$/);
      expect(service.image, name).not.toMatch(/:latest$/);
    }
    for (const [name, service] of Object.entries(services)) {
      if (name === 'minio-bucket') continue; // a one-shot job: Signet waits for it to complete
      expect([service.healthcheck?.test].flat().length, `${name} has no healthcheck`).toBeGreaterThan(1);
    }
  });

  it('publishes each host port once, so that profiles combine', () => {
    const hostPorts = Object.values(services).flatMap((s) =>
      (s.ports ?? []).map((p) => (typeof p === 'object' ? Number(p.published) : Number(String(p).split(':').at(-2)))),
    );
    expect(hostPorts.sort()).toEqual([...new Set(hostPorts)].sort());
    expect(hostPorts.sort()).toEqual([3000, 8025, 8080, 9000, 9001]);
  });

  it('declares every named volume it mounts, and mounts every one it declares', () => {
    const named = Object.values(services).flatMap((s) =>
      (s.volumes ?? [])
        .map((v) => (typeof v === 'string' ? v.split(':')[0]! : v.source!))
        .filter((source) => !source.startsWith('.') && !source.startsWith('/')),
    );
    expect([...new Set(named)].sort()).toEqual(Object.keys(compose.volumes ?? {}).sort());
    // Bind mounts are files of this repository.
    for (const s of Object.values(services))
      for (const v of s.volumes ?? [])
        if (typeof v === 'string' && v.startsWith('./'))
          expect(fs.existsSync(path.join(ROOT, v.split(':')[0]!))).toBe(true);
  });

  it('makes signet depend on known services, and on the profiles’ services only when they run', () => {
    for (const [name, service] of Object.entries(services)) {
      const dependsOn = Array.isArray(service.depends_on) ? {} : (service.depends_on ?? {});
      for (const [target, { required }] of Object.entries(dependsOn)) {
        expect(services[target], `${name} depends on ${target}`).toBeDefined();
        const optional = (services[target]!.profiles ?? []).some((p) => !(service.profiles ?? []).includes(p));
        expect(required === false, `${name} → ${target} required: false`).toBe(optional);
      }
    }
    expect(Object.keys(signet!.depends_on as object).sort()).toEqual(
      ['gotenberg', 'mailpit', 'minio-bucket', 'mongo', 'postgres', 'redis'].sort(),
    );
  });

  it.each(Object.keys(PROFILES))('deploy/%s.env gives signet settings src/config.ts accepts', (profile) => {
    const vars = envFile(profile);
    const env = environmentOf(signet!, vars);
    const known = configVariables();
    expect(Object.keys(env).filter((key) => !known.includes(key))).toEqual([]);
    for (const key of Object.keys(vars))
      expect(known.includes(key) || key === 'MINIO_BUCKET', `${key} is read by src/config.ts`).toBe(true);
    expect(() => loadConfig(env)).not.toThrow();
    // Every variable of the file reaches the service (none is forgotten in docker-compose.yml).
    for (const [key, value] of Object.entries(vars)) if (known.includes(key)) expect(env[key], key).toBe(value);
  });

  it('mongo: JOBS_MONGODB_URL names the mongo service on its port', () => {
    const config = loadConfig(environmentOf(signet!, envFile('mongo')));
    const url = new URL(config.jobsMongodbUrl!);
    expect([url.protocol, url.hostname, url.port]).toEqual(['mongodb:', 'mongo', '27017']);
    expect(services.mongo!.image).toMatch(/^mongo:\d+$/);
  });

  it('mailpit: SMTP_URL names the mailpit service on its SMTP port; its web UI is published', () => {
    const config = loadConfig(environmentOf(signet!, envFile('mailpit')));
    const url = new URL(config.smtpUrl!);
    expect([url.protocol, url.hostname, url.port]).toEqual(['smtp:', 'mailpit', '1025']);
    expect(services.mailpit!.ports?.map(containerPort)).toEqual([8025]);
  });

  it('minio: STORAGE_URL names the bucket minio-bucket creates, on the minio service, with its credentials', () => {
    const vars = envFile('minio');
    const storage = loadConfig(environmentOf(signet!, vars)).storage!;
    expect(new URL(storage.endpoint!).host).toBe('minio:9000');
    expect(storage.forcePathStyle).toBe(true);
    const minio = environmentOf(services.minio!, vars);
    expect(storage.credentials).toEqual({
      accessKeyId: minio.MINIO_ROOT_USER,
      secretAccessKey: minio.MINIO_ROOT_PASSWORD,
    });
    const bucketJob = environmentOf(services['minio-bucket']!, vars);
    expect(bucketJob.BUCKET).toBe(storage.bucket);
    expect(bucketJob.AWS_ACCESS_KEY_ID).toBe(minio.MINIO_ROOT_USER);
    expect(services['minio-bucket']!.entrypoint!.join(' ')).toContain('mc mb --ignore-existing "minio/$$BUCKET"');
    expect((services['minio-bucket']!.depends_on as Record<string, { condition: string }>).minio!.condition).toBe(
      'service_healthy',
    );
    expect(services.minio!.ports?.map(containerPort)).toEqual([9000, 9001]);
  });

  it('scale: a second replica like the first, behind the proxy that APP_URL names', () => {
    const { ports: _ports, profiles: _profiles, ...first } = signet!;
    const { ports: secondPorts, profiles: _secondProfiles, ...second } = services['signet-2']!;
    expect(second).toEqual(first);
    expect(secondPorts).toBeUndefined();

    const config = loadConfig(environmentOf(signet!, envFile('scale')));
    const caddyfile = read('deploy/Caddyfile');
    const listen = /^:(\d+) \{/m.exec(caddyfile)?.[1];
    expect(services.proxy!.ports).toEqual([`${listen}:${listen}`]);
    expect(config.appUrl).toBe(`http://localhost:${listen}`);
    const upstreams = /reverse_proxy ([^{]+)\{/.exec(caddyfile)![1]!.trim().split(/\s+/);
    expect(upstreams).toEqual([`signet:${config.port}`, `signet-2:${config.port}`]);
    expect(caddyfile).toMatch(/^\s*health_uri \/health$/m);
    expect(caddyfile).toMatch(/^\s*lb_try_duration \d+s$/m);
    expect(services.proxy!.volumes).toContain('./deploy/Caddyfile:/etc/caddy/Caddyfile:ro');
    // The replicas share DATA_DIR (the generated SECRET_KEY_BASE, local files) unless S3 holds the files.
    expect(services['signet-2']!.volumes).toEqual(signet!.volumes);
  });

  const docker = (() => {
    try {
      execFileSync('docker', ['compose', 'version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  it.runIf(docker).each([[], ...Object.keys(PROFILES).map((p) => [p])])(
    'docker compose config accepts the file (profile %s)',
    (profile?: string) => {
      const args = profile ? ['--profile', profile, '--env-file', `deploy/${profile}.env`] : [];
      execFileSync('docker', ['compose', ...args, 'config', '--quiet'], { cwd: ROOT });
    },
  );
});
