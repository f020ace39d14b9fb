/** Configuration from the environment. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      // The development account's key is printed: loopback unless HOST says otherwise.
      host: '127.0.0.1',
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

  it('listens on loopback while the development account may be created, on every interface otherwise', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).host).toBe('127.0.0.1');
    expect(loadConfig({ CREATE_DEV_ACCOUNT: 'false' }).host).toBe('0.0.0.0');
    expect(loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgresql://db/signet' }).host).toBe('0.0.0.0');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgresql://db/signet', HOST: '::1' }).host).toBe(
      '::1',
    );
  });

  it('writes pretty log lines to a terminal outside production, JSON otherwise', () => {
    expect(loadConfig({}, true).logFormat).toBe('pretty');
    expect(loadConfig({ NODE_ENV: 'test' }, true).logFormat).toBe('pretty');
    expect(loadConfig({ NODE_ENV: 'production' }, true).logFormat).toBe('json');
    expect(loadConfig({}, false).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'json' }, true).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty', NODE_ENV: 'production' }, false).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT/);
  });

  it('reads the pool size, the metrics token and the tracing endpoint', () => {
    expect(loadConfig({})).toMatchObject({ databasePoolSize: 10, metricsToken: undefined, tracing: undefined });
    expect(
      loadConfig({
        DATABASE_POOL_SIZE: '25',
        METRICS_TOKEN: 'a-long-enough-token',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/',
      }),
    ).toMatchObject({
      databasePoolSize: 25,
      metricsToken: 'a-long-enough-token',
      tracing: { endpoint: 'http://127.0.0.1:4318', serviceName: 'signet' },
    });
    expect(() => loadConfig({ DATABASE_POOL_SIZE: '1' })).toThrow(/DATABASE_POOL_SIZE/);
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN/);
  });
});
