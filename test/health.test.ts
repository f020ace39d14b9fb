/** GET /health: 200 when the database answers, 503 with a reason when it does not. */
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.ts';

const apps: TestApp[] = [];
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

/** A port on which nothing listens. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('GET /health', () => {
  it('answers 200 {"status":"ok"} when the database answers', async () => {
    const t = await startTestApp();
    apps.push(t);
    const response = await fetch(`${t.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('answers 503 with a reason when the database does not', async () => {
    const t = await startTestApp({ databaseUrl: `postgresql://postgres@127.0.0.1:${await closedPort()}/nothing` });
    apps.push(t);
    const response = await fetch(`${t.url}/health`);
    expect(response.status).toBe(503);
    const body = await response.json();
    expect(body.status).toBe('unavailable');
    expect(body.reason).toMatch(/^database unavailable: .+/);
  });
});
