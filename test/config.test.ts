/** Configuration from the environment. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      host: '0.0.0.0',
      appUrl: 'http://localhost:3000',
      dataDir: path.resolve('./data'),
      databaseUrl: undefined,
      maxBodySize: 50 * 1024 * 1024,
      graphiql: true,
      createDevAccount: true,
      logLevel: 'info',
    });
  });

  it('reads overrides; empty values count as unset', () => {
    const config = loadConfig({
      PORT: '8080',
      APP_URL: 'https://sign.example.com/',
      DATABASE_URL: '',
      NODE_ENV: 'production',
      MAX_BODY_SIZE_MB: '5',
    });
    expect(config).toMatchObject({
      port: 8080,
      appUrl: 'https://sign.example.com',
      databaseUrl: undefined,
      graphiql: false,
      maxBodySize: 5 * 1024 * 1024,
    });
  });

  it('creates the development account by default, except in production on an external database', () => {
    // The README quick start: `npm start` (NODE_ENV=production) on the embedded database.
    expect(loadConfig({ NODE_ENV: 'production' }).createDevAccount).toBe(true);
    expect(
      loadConfig({ NODE_ENV: 'development', DATABASE_URL: 'postgresql://localhost/signet' }).createDevAccount,
    ).toBe(true);
    expect(loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgresql://localhost/signet' }).createDevAccount).toBe(true);
    // A deploy (docker-compose.yml): no key in the logs unless asked for.
    expect(loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgresql://db/signet' }).createDevAccount).toBe(false);
    expect(
      loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgresql://db/signet', CREATE_DEV_ACCOUNT: 'true' })
        .createDevAccount,
    ).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', CREATE_DEV_ACCOUNT: 'false' }).createDevAccount).toBe(false);
  });

  it('names every invalid variable', () => {
    expect(() => loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud' })).toThrow(/PORT.*LOG_LEVEL|LOG_LEVEL.*PORT/);
  });
});
