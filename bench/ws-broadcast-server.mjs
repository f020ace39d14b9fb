// The baseline of `npm run bench:subscriptions` (bench/subscriptions.ts): a bare node:http + `ws`
// server on 127.0.0.1:$PORT. WebSocket clients connect to any path; `POST /broadcast` sends its
// body, as is, to every connected client and answers {"sent": <clients>}. `GET /health` answers
// 200. Plain JavaScript run by plain node, as Signet's dist/main.mjs is, so RSS compares fairly.
import http from 'node:http';
import { WebSocketServer } from 'ws';

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) throw new Error('PORT must be set');

const server = http.createServer((request, response) => {
  if (request.method === 'GET' && request.url === '/health') {
    response.end('ok');
    return;
  }
  if (request.method === 'POST' && request.url === '/broadcast') {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      for (const socket of webSockets.clients) socket.send(body);
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ sent: webSockets.clients.size }));
    });
    return;
  }
  response.statusCode = 404;
  response.end();
});
const webSockets = new WebSocketServer({ server });

server.listen(port, '127.0.0.1', () => process.stdout.write(`listening on ${port}\n`));
process.once('SIGTERM', () => {
  for (const socket of webSockets.clients) socket.terminate();
  server.close(() => process.exit(0));
});
