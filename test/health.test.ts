/** GET /health: 200 when the database answers; 503 with Retry-After, naming nothing, when it does not. */
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

  it(
    'answers 503 {"status":"unavailable"} with Retry-After when the database does not, ' +
      'naming neither it nor its host; the cause is logged',
    async () => {
      const port = await closedPort();
      const t = await startTestApp({ databaseUrl: `postgresql://postgres@127.0.0.1:${port}/nothing` });
      apps.push(t);
      const response = await fetch(`${t.url}/health`);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('5');
      const text = await response.text();
      expect(JSON.parse(text)).toEqual({ status: 'unavailable' });
      for (const secret of [String(port), '127.0.0.1', 'nothing', 'postgres', 'database'])
        expect(text).not.toContain(secret);
      const logged = t.logs.find((line) => line.msg === 'health check: the database did not answer');
      expect(JSON.stringify(logged?.err)).toContain(String(port));
    },
  );
});
