/** GET /health: 200 when the database answers, 503 with a reason when it does not. */
import { freePort as closedPort } from './helpers/processes.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.ts';

const apps: TestApp[] = [];
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
});


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
