import net from 'node:net';

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now (the OS picks it). Another process
 * may take it before the caller does; callers that must be sure retry or report the bind error.
 */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
