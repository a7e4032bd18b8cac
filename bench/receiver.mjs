// The webhook subscriber of the bench's webhook scenarios: a fast node:http receiver on loopback
// that answers every POST 204 at once and counts them. GET /count answers the count so far.
//
//   PORT=… node bench/receiver.mjs
import { createServer } from 'node:http';

let received = 0;
createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/count') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(`{"received":${received}}`);
  }
  req.resume();
  req.on('end', () => {
    received++;
    res.writeHead(204);
    res.end();
  });
}).listen(Number(process.env.PORT ?? 3200), '127.0.0.1');
