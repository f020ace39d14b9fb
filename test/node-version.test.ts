/**
 * The Node.js version Signet claims (package.json `engines.node`) is true (issue 18):
 * - every installed package's own `engines.node` accepts the lowest version we claim (so `npm ci`
 *   on it warns of none);
 * - the Dockerfile pins one Node version, in every stage, that the claim accepts;
 * - on the lowest claimed version and on the image's, both real Node binaries from npm's `node`
 *   package (npx, from the registry, no other download), the CLI creates an account (migrations
 *   applied on the way), and the service as `npm start` runs it starts, answers /health, stores a
 *   template and a completed submission in S3 (s3rver on loopback: the AWS SDK runs on that Node
 *   too), serves the signed document, and stops cleanly on SIGTERM.
 * The rest of the suite runs on the machine's Node (20 here, and on CI): the versions between are
 * covered by the Node 22 line's compatibility promise.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import semver from 'semver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './helpers/database.ts';
import { buildService, childEnv, freePort, ROOT } from './helpers/processes.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';
import { startS3Server, type TestS3Server } from './helpers/s3-server.ts';

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const claimed = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
const lowest = semver.minVersion(claimed)!.version;

/** The version every FROM of the Dockerfile uses (`ARG NODE_VERSION=…`, `FROM node:${NODE_VERSION}-…`). */
function dockerNodeVersion(): string {
  const dockerfile = read('Dockerfile');
  const version = /^ARG NODE_VERSION=(\d+\.\d+\.\d+)$/m.exec(dockerfile)?.[1];
  expect(version, 'Dockerfile has no `ARG NODE_VERSION=x.y.z`').toBeDefined();
  const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]!);
  for (const from of froms) expect(from).toMatch(/^(node:\$\{NODE_VERSION\}-bookworm-slim|[a-z-]+)$/);
  expect(froms.some((from) => from.startsWith('node:'))).toBe(true);
  return version!;
}

describe('engines.node', () => {
  it('is accepted by the engines of every installed package', () => {
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { engines?: Record<string, string> | string[]; optional?: boolean }>;
    };
    const refusing = Object.entries(lock.packages)
      .filter(([location, entry]) => location !== '' && !Array.isArray(entry.engines) && entry.engines?.node)
      .filter(([, entry]) => !semver.satisfies(lowest, (entry.engines as Record<string, string>).node!))
      .map(([location, entry]) => `${location} wants node ${(entry.engines as Record<string, string>).node}`);
    expect(refusing, `engines.node "${claimed}" (lowest ${lowest})`).toEqual([]);
  });

  it('holds the Dockerfile’s pinned Node version', () => {
    expect(semver.satisfies(dockerNodeVersion(), claimed)).toBe(true);
  });
});

describe.each([
  ['the lowest claimed version', lowest],
  ['the Docker image’s version', dockerNodeVersion()],
])('on %s (Node %s)', (_label, version) => {
  let node: string;
  let s3: TestS3Server;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-node-version-'));

  beforeAll(async () => {
    // npm's `node` package: its platform package carries the binary (no download of its own).
    const { stdout } = await promisify(execFile)(
      'npx',
      ['--yes', '-p', `node@${version}`, 'node', '-p', 'process.execPath'],
      {
        cwd: tmp,
        timeout: 180_000,
      },
    );
    node = stdout.trim();
    s3 = await startS3Server();
    await buildService();
  }, 240_000);
  afterAll(async () => {
    await s3?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('runs the CLI and the service: start, a completed submission with its files in S3, SIGTERM', async () => {
    const { stdout: reported } = await promisify(execFile)(node, ['--version']);
    expect(reported.trim()).toBe(`v${version}`);
    const database = await createTestDatabase({ migrate: false });
    let child: ChildProcess | undefined;
    try {
      const env = {
        DATABASE_URL: database.url,
        DATA_DIR: path.join(tmp, 'data'),
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
        ...s3.env({ prefix: `node-${version}` }),
      };
      const cli = await promisify(execFile)(
        node,
        [path.join(ROOT, 'bin', 'signet.mjs'), 'account', 'create', '--name', 'Node', '--email', 'node@version.test'],
        { cwd: ROOT, env: childEnv(env) },
      );
      const { apiKey } = JSON.parse(cli.stdout) as { apiKey: string };

      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      child = spawn(node, ['--enable-source-maps', path.join(ROOT, 'dist', 'main.mjs')], {
        cwd: ROOT,
        env: childEnv({ ...env, PORT: String(port), HOST: '127.0.0.1', APP_URL: url }),
      });
      let output = '';
      child.stdout!.on('data', (chunk) => (output += chunk));
      child.stderr!.on('data', (chunk) => (output += chunk));
      const exited = new Promise<number | null>((resolve) => child!.once('exit', resolve));
      await until(async () => {
        if (child!.exitCode !== null) throw new Error(`service exited with ${child!.exitCode}:\n${output}`);
        const health = await fetch(`${url}/health`).catch(() => undefined);
        return health?.status === 200 && output.includes('Signet is running');
      }, 60_000);

      const api = async (method: string, route: string, body?: unknown) => {
        const response = await fetch(`${url}/api${route}`, {
          method,
          headers: { 'X-Auth-Token': apiKey, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: response.status, json: (await response.json()) as any };
      };
      const pdf = await drawPdf([{ texts: [{ text: `On Node ${version}`, x: 72, y: 72 }] }]);
      const template = await api('POST', '/templates/pdf', {
        name: 'Smoke',
        documents: [{ name: 'smoke', file: base64(pdf) }],
        fields: [{ name: 'Full Name', role: 'Signer', areas: [{ x: 72, y: 120, w: 200, h: 30, page: 1 }] }],
      });
      expect(template.status, JSON.stringify(template.json)).toBe(200);
      const created = await api('POST', '/submissions', {
        template_id: template.json.id,
        send_email: false,
        submitters: [{ role: 'Signer', email: 'signer@version.test', completed: true, values: { 'Full Name': 'N' } }],
      });
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      let submission: any;
      await until(async () => {
        submission = (await api('GET', `/submissions/${created.json[0].submission_id}`)).json;
        return submission.status === 'completed' && submission.documents.length > 0;
      }, 30_000);
      const document = await fetch(submission.documents[0].url);
      expect(document.status).toBe(200);
      expect(
        Buffer.from(await document.arrayBuffer())
          .subarray(0, 5)
          .toString(),
      ).toBe('%PDF-');
      expect((await s3.objectKeys()).some((key) => key.includes('/named/completions/'))).toBe(true);
      expect(fs.existsSync(path.join(tmp, 'data', 'files'))).toBe(false);

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      // No error or fatal log line, and no warning that this Node is not supported.
      expect(output).not.toMatch(/"level":(50|60)|Unsupported engine|NodeVersionSupportWarning|ERR_/);
    } finally {
      if (child?.exitCode === null) child.kill('SIGKILL');
      await database.drop();
    }
  }, 120_000);
});

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
