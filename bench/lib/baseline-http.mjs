// What the hand-written baselines (bench/baseline.mjs, bench/baseline-pg.mjs) and the Koa floor
// (bench/koa-floor.mjs) share: writing an `Error`-shaped or JSON answer, and reading a NewPlant
// body with exact int64 ids.
import { isInteger, parse } from 'lossless-json';

export const MIN = -(2n ** 63n);
export const MAX = 2n ** 63n - 1n;

export function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A NewPlant from JSON text with exact int64 ids, or `{ error }` saying why the text is not one. */
export function parseNewPlant(text) {
  let plant;
  try {
    plant = parse(text, null, (n) => (isInteger(n) ? BigInt(n) : Number(n)));
  } catch {
    return { error: 'Malformed JSON.' };
  }
  const { id, name, tag } = plant ?? {};
  if (
    typeof id !== 'bigint' ||
    id < MIN ||
    id > MAX ||
    typeof name !== 'string' ||
    (tag !== undefined && typeof tag !== 'string')
  ) {
    return { error: 'Not a NewPlant.' };
  }
  return { plant: { id, name, tag } };
}

/** Reads the request body as JSON (exact int64 numbers) and calls `use(value)`; answers 400 itself when it is not JSON. */
export function readJson(req, res, use) {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let value;
    try {
      value = parse(Buffer.concat(chunks).toString('utf8'), null, (n) => (isInteger(n) ? BigInt(n) : Number(n)));
    } catch {
      return send(res, 400, { error: 400, message: 'Malformed JSON.' });
    }
    use(value);
  });
}

/** Reads the request body as a NewPlant and calls `create(plant)`; answers 400 itself when it is not one. */
export function readNewPlant(req, res, create) {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const { plant, error } = parseNewPlant(Buffer.concat(chunks).toString('utf8'));
    if (error) return send(res, 400, { error: 400, message: error });
    create(plant);
  });
}
