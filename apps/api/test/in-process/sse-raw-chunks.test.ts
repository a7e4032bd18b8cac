import { once } from 'node:events';
import http from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * http/sse.ts writes event frames to the socket as ready-made HTTP chunks, around node:http's own
 * `res.write` (kept by the rule of docs/architecture.md, Going around a library: the events bench's
 * commit-to-delivery p99). It relies on what this checks of node:http: after `flushHeaders()` the
 * response says whether it is chunked (`res.chunkedEncoding`, not in Node's documentation), the
 * headers are on the socket, and chunks written to the socket then `res.end()` make a body node's
 * own client reads. When a Node upgrade changes that, this fails: make sse.ts follow, or go back to
 * `res.write`.
 */
const RULE =
  "node:http no longer behaves as http/sse.ts's raw chunks assume: fix sse.ts or go back to res.write (docs/architecture.md, Going around a library)";

const chunk = (text: string) => Buffer.from(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`);
const FRAMES = ['retry: 1000\n\n', 'id: 1\nevent: plant.created\ndata: {"id":1}\n\n'];

describe('node:http as the SSE writer uses it', () => {
  const seen: unknown[] = [];
  const server = http.createServer((req, res) => {
    res.setHeader('Content-Type', 'text/event-stream');
    res.flushHeaders();
    const chunked = (res as unknown as { chunkedEncoding?: unknown }).chunkedEncoding;
    seen.push(chunked);
    for (const frame of FRAMES) req.socket.write(chunked === true ? chunk(frame) : frame);
    res.end();
  });
  let port = 0;
  beforeAll(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise((done) => server.close(done)));

  it('HTTP/1.1: chunked, and node:http reads the chunks written to the socket as the body', async () => {
    seen.length = 0;
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
          expect(res.headers['transfer-encoding'], RULE).toBe('chunked');
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (part: string) => {
            text += part;
          });
          res.on('end', () => resolve(text));
          res.on('error', reject);
        })
        .on('error', reject);
    });
    expect(seen, RULE).toEqual([true]);
    expect(body, RULE).toBe(FRAMES.join(''));
  });

  it('HTTP/1.0: not chunked, the frames as they are, ending with the connection', async () => {
    seen.length = 0;
    const socket = connect(port, '127.0.0.1');
    socket.write('GET / HTTP/1.0\r\n\r\n');
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (part: string) => {
      raw += part;
    });
    await once(socket, 'end');
    expect(seen, RULE).toEqual([false]);
    expect(raw.slice(raw.indexOf('\r\n\r\n') + 4), RULE).toBe(FRAMES.join(''));
  });
});
