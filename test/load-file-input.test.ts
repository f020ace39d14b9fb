/**
 * `file` / `default_value` inputs: base64, data URLs and downloads (real HTTP servers on loopback).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { isPublicAddress, loadFileInput, type LoadFileInputOptions } from '../src/documents/load-file-input.ts';
import { AppError } from '../src/errors.ts';

const FIELD = 'file in `documents[0]`';
const base: LoadFileInputOptions = { field: FIELD, allowPrivate: true, maxBytes: 1024 * 1024, timeoutMs: 5000 };

interface TestServer {
  url: string;
  port: number;
  /** Request paths in arrival order, with their Host header. */
  requests: { path: string; host: string | undefined }[];
  close(): Promise<void>;
}

const servers: TestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function serve(handler: http.RequestListener): Promise<TestServer> {
  const requests: TestServer['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ path: req.url ?? '', host: req.headers.host });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const s: TestServer = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  servers.push(s);
  return s;
}

/** The AppError loadFileInput rejects with (fails the test if it resolves or throws something else). */
async function failure(input: unknown, options: Partial<LoadFileInputOptions> = {}): Promise<AppError> {
  const error = await loadFileInput(input, { ...base, ...options }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe('VALIDATION');
  expect((error as AppError).status).toBe(422);
  return error as AppError;
}

describe('base64 and data URLs', () => {
  const bytes = randomBytes(300);

  it('decodes base64, with or without padding, wrapped lines or the base64url alphabet', async () => {
    const b64 = bytes.toString('base64');
    for (const text of [
      b64,
      b64.replace(/=+$/, ''),
      b64.replace(/(.{76})/g, '$1\r\n'),
      ` ${b64}\n`,
      bytes.toString('base64url'),
    ]) {
      expect(await loadFileInput(text, base)).toEqual({ bytes, filename: undefined, contentType: undefined });
    }
    expect((await loadFileInput('YQ==', base)).bytes.toString()).toBe('a');
  });

  it('decodes a data URL and returns its type', async () => {
    const loaded = await loadFileInput(`data:application/PDF;base64,${bytes.toString('base64')}`, base);
    expect(loaded).toEqual({ bytes, filename: undefined, contentType: 'application/pdf' });
    const withParameters = await loadFileInput(
      `data:text/plain;charset=utf-8;base64,${Buffer.from('hi').toString('base64')}`,
      base,
    );
    expect(withParameters).toEqual({ bytes: Buffer.from('hi'), filename: undefined, contentType: 'text/plain' });
  });

  it('says the field is required when the value is missing, not a string or empty', async () => {
    for (const value of [undefined, null, 42, {}, [], '', '   ', '\n']) {
      expect((await failure(value)).message).toBe('file is required in `documents[0]`.');
    }
    expect((await failure(undefined, { field: 'default_value' })).message).toBe('default_value is required.');
  });

  it('refuses text that is not strictly base64', async () => {
    for (const text of [
      'not base64!',
      'abcde',
      'QQ=',
      'QQ===',
      'QR==',
      'Q===',
      '=QQ=',
      'QQ==QQ==',
      'Zm9v*mFy',
      'Zm9v\u00e9',
    ]) {
      expect((await failure(text)).message, JSON.stringify(text)).toBe(
        'file is not valid base64 or an http(s) URL in `documents[0]`.',
      );
    }
    expect((await failure('data:application/pdf;base64,@@@')).message).toBe(
      'file is not valid base64 or an http(s) URL in `documents[0]`.',
    );
  });

  it('refuses a data URL that is not base64', async () => {
    expect((await failure('data:text/plain,hello')).message).toBe(
      'file is a data URL without ";base64"; send base64 data in `documents[0]`.',
    );
  });

  it('refuses decoded data over maxBytes before decoding it', async () => {
    const error = await failure(randomBytes(1025).toString('base64'), { maxBytes: 1024 });
    expect(error.message).toBe('file is larger than 1 KB in `documents[0]`.');
    expect((await loadFileInput(randomBytes(1024).toString('base64'), { ...base, maxBytes: 1024 })).bytes.length).toBe(
      1024,
    );
  });
});

describe('isPublicAddress', () => {
  it(
    'refuses loopback, private, link-local, unique-local, multicast, unspecified, ' + 'CGNAT and reserved addresses',
    () => {
      for (const address of [
        '127.0.0.1',
        '127.1.2.3',
        '10.0.0.1',
        '172.16.5.4',
        '172.31.255.255',
        '192.168.1.1',
        '169.254.169.254',
        '100.64.0.1',
        '0.0.0.0',
        '224.0.0.1',
        '239.255.255.250',
        '255.255.255.255',
        '192.0.2.1',
        '198.18.0.1',
        '240.0.0.1',
        '::1',
        '::',
        'fe80::1',
        'fe80::1%lo',
        'fc00::1',
        'fd12:3456::1',
        'ff02::1',
        '::ffff:127.0.0.1',
        '::ffff:10.0.0.1',
        '::ffff:169.254.169.254',
        '::127.0.0.1',
        '64:ff9b::a00:1',
        '2001:db8::1',
        '2002:7f00:1::1',
        '[::1]',
        'localhost',
        'not an address',
        '',
      ]) {
        expect(isPublicAddress(address), address).toBe(false);
      }
    },
  );

  it('accepts public unicast addresses, also IPv4-mapped', () => {
    for (const address of [
      '8.8.8.8',
      '93.184.216.34',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700:4700::1111',
      '2a00:1450:4001::200e',
      '::ffff:8.8.8.8',
    ]) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });
});

describe('URLs', () => {
  it(
    'downloads from a loopback server when private addresses are allowed, ' + 'with the name from Content-Disposition',
    async () => {
      const body = randomBytes(50_000);
      const server = await serve((_req, res) => {
        res.writeHead(200, {
          'content-type': 'application/pdf; qs=1',
          'content-disposition': `attachment; filename="fallback.pdf"; filename*=UTF-8''Vertrag%20M%C3%A4rz.pdf`,
        });
        res.end(body);
      });

      const loaded = await loadFileInput(`${server.url}/download?id=7`, base);

      expect(loaded).toEqual({ bytes: body, filename: 'Vertrag März.pdf', contentType: 'application/pdf' });
    },
  );

  it('takes the filename from a plain Content-Disposition, or else from the URL path', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/quoted') res.setHeader('content-disposition', 'inline; filename="../a \\"b\\".pdf"');
      res.end('x');
    });
    expect((await loadFileInput(`${server.url}/quoted`, base)).filename).toBe('a "b".pdf');
    expect(await loadFileInput(`${server.url}/files/My%20Contract.pdf?x=1`, base)).toEqual({
      bytes: Buffer.from('x'),
      filename: 'My Contract.pdf',
      contentType: undefined,
    });
    expect((await loadFileInput(`${server.url}/`, base)).filename).toBeUndefined();
  });

  it('refuses loopback and private hosts when private addresses are not allowed, without connecting', async () => {
    const server = await serve((_req, res) => res.end('secret'));
    const refused = { allowPrivate: false };
    for (const url of [
      `${server.url}/x.pdf`,
      `http://localhost:${server.port}/x.pdf`,
      `http://[::1]:${server.port}/x.pdf`,
      `http://2130706433:${server.port}/x.pdf`,
      'http://10.1.2.3/x.pdf',
      'http://169.254.169.254/latest/meta-data/',
    ]) {
      const error = await failure(url, refused);
      expect(error.message, url).toBe(
        `Error loading: ${url} (${FIELD}). Can't download from this host: it is not a public address, or its name ` +
          `does not resolve.`,
      );
    }
    expect(server.requests).toEqual([]);
  });

  it('checks every address a name resolves to (fake resolver)', async () => {
    const cases: Record<string, string[]> = {
      'ten.example.test': ['10.0.0.7'],
      'metadata.example.test': ['169.254.169.254'],
      'six.example.test': ['::1'],
      'mixed.example.test': ['93.184.216.34', '192.168.0.10'],
    };
    const resolve = async (host: string) =>
      (cases[host] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    for (const host of Object.keys(cases)) {
      const error = await failure(`https://${host}/file.pdf`, { allowPrivate: false, resolve });
      expect(error.message).toContain(
        "Can't download from this host: it is not a public address, or its name does not resolve.",
      );
    }
    // A name that does not resolve gets the very same answer as a private one: downloads do not
    // tell a caller which internal names exist.
    const unresolved = (await failure('https://nowhere.example.test/file.pdf', { resolve })).message;
    const privateName = (await failure('https://ten.example.test/file.pdf', { allowPrivate: false, resolve })).message;
    expect(unresolved.replace('nowhere', 'ten')).toBe(privateName);
  });

  it('connects to the address it checked, whatever the name resolves to later (no DNS rebinding)', async () => {
    const server = await serve((_req, res) => res.end('from the checked address'));
    const answers = ['127.0.0.1', '10.255.255.1'];
    let calls = 0;
    const resolve = async () => [{ address: answers[Math.min(calls++, 1)], family: 4 }];

    const loaded = await loadFileInput(`http://files.example.test:${server.port}/doc.pdf`, {
      ...base,
      resolve,
      timeoutMs: 2000,
    });

    expect(loaded.bytes.toString()).toBe('from the checked address');
    expect(calls).toBe(1);
    expect(server.requests).toEqual([{ path: '/doc.pdf', host: `files.example.test:${server.port}` }]);
  });

  it('refuses schemes other than http and https', async () => {
    for (const url of ['ftp://example.com/a.pdf', 'file:///etc/passwd', 'javascript:alert(1)', 'gopher://x/']) {
      expect((await failure(url)).message).toBe(
        `Error loading: ${url} (${FIELD}). Only http and https URLs are allowed.`,
      );
    }
  });

  it('follows up to 3 redirects, checking each target', async () => {
    const server = await serve((req, res) => {
      const hop = /^\/hop\/(\d+)$/.exec(req.url ?? '');
      if (hop && Number(hop[1]) > 0) res.writeHead(302, { location: `/hop/${Number(hop[1]) - 1}` }).end();
      else if (hop) res.writeHead(200, { 'content-type': 'application/pdf' }).end('arrived');
      else if (req.url === '/to-private') res.writeHead(301, { location: 'http://10.0.0.1/internal.pdf' }).end();
      else if (req.url === '/to-metadata') res.writeHead(307, { location: 'http://169.254.169.254/latest' }).end();
      else if (req.url === '/to-v6')
        res.writeHead(308, { location: `http://[::1]:${req.socket.localPort}/hop/0` }).end();
      else if (req.url === '/to-ftp') res.writeHead(302, { location: 'ftp://example.com/x' }).end();
      else res.writeHead(302, { location: req.url ?? '/' }).end();
    });
    // Treat this one loopback server as if it were public; everything else is judged as usual.
    const onlyThisServer = {
      allowPrivate: false,
      isAllowedAddress: (address: string) => address === '127.0.0.1' || isPublicAddress(address),
    };

    const loaded = await loadFileInput(`${server.url}/hop/3`, { ...base, ...onlyThisServer });
    expect(loaded).toEqual({ bytes: Buffer.from('arrived'), filename: '0', contentType: 'application/pdf' });

    for (const path of ['/to-private', '/to-metadata', '/to-v6']) {
      const error = await failure(`${server.url}${path}`, onlyThisServer);
      expect(error.message).toBe(
        `Error loading: ${server.url}${path} (${FIELD}). Can't download from this host: it is not a public address, ` +
          `or its name does not resolve.`,
      );
    }
    expect((await failure(`${server.url}/to-ftp`, onlyThisServer)).message).toContain(
      'Only http and https URLs are allowed.',
    );

    server.requests.length = 0;
    expect((await failure(`${server.url}/hop/4`, onlyThisServer)).message).toBe(
      `Error loading: ${server.url}/hop/4 (${FIELD}). More than 3 redirects.`,
    );
    expect(server.requests.map((r) => r.path)).toEqual(['/hop/4', '/hop/3', '/hop/2', '/hop/1']);
  });

  it('gives up after timeoutMs when the server never answers', async () => {
    const server = await serve(() => undefined);
    const started = Date.now();
    const error = await failure(`${server.url}/slow.pdf`, { timeoutMs: 300 });
    const elapsed = Date.now() - started;
    expect(error.message).toBe(
      `Error loading: ${server.url}/slow.pdf (${FIELD}). No complete answer within 0.3 seconds.`,
    );
    expect(elapsed).toBeGreaterThanOrEqual(280);
    expect(elapsed).toBeLessThan(5000);
  });

  it('counts the time for the whole download, body included', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('x'), 50);
      res.on('close', () => clearInterval(timer));
    });
    // The body never ends: only a timer over the whole download can end this (a timer on the
    // headers or on idle sockets would wait for ever), so the answer itself is the proof.
    const error = await failure(`${server.url}/trickle`, { timeoutMs: 400 });
    expect(error.message).toContain('No complete answer within 0.4 seconds.');
  });

  it('aborts a body that grows past maxBytes while streaming', async () => {
    let closed!: () => void;
    const serverSawClose = new Promise<void>((resolve) => (closed = resolve));
    let sent = 0;
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/pdf' }); // no Content-Length: chunked
      const timer = setInterval(() => {
        sent += 4096;
        res.write(randomBytes(4096));
      }, 2);
      res.on('close', () => {
        clearInterval(timer);
        closed();
      });
    });

    const error = await failure(`${server.url}/endless.pdf`, { maxBytes: 64 * 1024, timeoutMs: 10_000 });

    expect(error.message).toBe(`Error loading: ${server.url}/endless.pdf (${FIELD}). The file is larger than 64 KB.`);
    await serverSawClose;
    expect(sent).toBeLessThan(1024 * 1024);
  });

  it('refuses a declared Content-Length over maxBytes without reading the body', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
      res.write('x'); // and then nothing: reading the body would end in a timeout, not this message
    });
    const error = await failure(`${server.url}/big.pdf`, { maxBytes: 1024 * 1024, timeoutMs: 5000 });
    expect(error.message).toContain('The file is larger than 1 MB.');
  });

  it('turns a non-2xx answer into 422 "Error loading" with the status', async () => {
    const server = await serve((req, res) => res.writeHead(req.url === '/gone' ? 404 : 500).end('nope'));
    const error = await failure(`${server.url}/gone`);
    expect(error.message).toBe(`Error loading: ${server.url}/gone (${FIELD}). The server answered HTTP 404 Not Found.`);
    expect(error.details).toMatchObject({ status: 404, field: FIELD });
    expect((await failure(`${server.url}/broken`)).message).toContain(
      'The server answered HTTP 500 Internal Server Error.',
    );
  });

  it('reports a refused connection, and keeps credentials out of the message', async () => {
    const server = await serve(() => undefined);
    const { port } = server;
    await server.close();
    const error = await failure(`http://user:secret@127.0.0.1:${port}/x.pdf`);
    expect(error.message).toBe(`Error loading: http://127.0.0.1:${port}/x.pdf (${FIELD}). The connection was refused.`);
  });

  it('decodes a gzip body sent although identity was asked for, and limits the decoded size', async () => {
    const plain = Buffer.alloc(200_000, 'a');
    const server = await serve((req, res) => {
      expect(req.headers['accept-encoding']).toBe('identity');
      res.writeHead(200, { 'content-encoding': 'gzip' }).end(zlib.gzipSync(plain));
    });
    expect((await loadFileInput(`${server.url}/a.txt`, base)).bytes).toEqual(plain);
    expect((await failure(`${server.url}/a.txt`, { maxBytes: 100_000 })).message).toContain(
      'The file is larger than 97.7 KB.',
    );
  });
});
