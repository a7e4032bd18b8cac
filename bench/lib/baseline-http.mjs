// What the bare baselines (bench/baseline.mjs, bench/baseline-pg.mjs) share: an `Error`-shaped or
// JSON answer, and a JSON body read with exact int64 numbers.
import { isInteger, parse } from 'lossless-json';

export const MIN = -(2n ** 63n);
export const MAX = 2n ** 63n - 1n;

export function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Reads the body as JSON (integers as BigInt) and calls `use(value)`; answers 400 itself when it is not JSON. */
export function readJson(req, res, use) {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let value;
    try {
      value = parse(Buffer.concat(chunks).toString('utf8'), null, (n) =>
        isInteger(n) ? BigInt(n) : Number(n),
      );
    } catch {
      return send(res, 400, { error: 400, message: 'Malformed JSON.' });
    }
    use(value ?? {});
  });
}
