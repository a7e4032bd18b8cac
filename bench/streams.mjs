// The event-stream worker of `events`: holds N open event streams (SSE or tRPC) and, when told, sends
// creates at a fixed rate (open loop) while timing each event's delivery on a sample of the streams.
// A process of its own on the load core. Commands arrive as JSON lines on stdin, answers leave as
// JSON lines on stdout:
//
//   node bench/streams.mjs <token>
//
//   {"cmd":"open","url","streams","trpc","types"?}  → {"streams","ms"}: trpc% tRPC subscriptions
//   {"cmd":"pace","url","rate","seconds","idStart"} → {"sent","ok",…,"fromCommit","fromSend"}
//   {"cmd":"counts"}                                → {"events","cut","open"}
//   {"cmd":"drop"}                                  → {}: every stream closed, counters at 0
//
// Every 10th stream (100th at 10,000) is timed: arrival − each event's `createdAt` (the server's
// stamp, before the commit) and − its create's send. The others count events (`id: ` lines).
// Plain sockets: node:http's parser and decoding were a third of this process's time.
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { percentiles, round2 } from './lib/stats.mjs';

const ID_LINE = Buffer.from('id: ');
const HEADERS_END = Buffer.from('\r\n\r\n');
const PLANT_ID = Buffer.from('"plant":{"id":');
const CREATED_AT = Buffer.from('"createdAt":"');
const FRAME_END = Buffer.from('\n\n');
const EMPTY = Buffer.alloc(0);
const SAMPLE_EVERY = 10;
const token = process.argv[2];

let streams = [];
let events = 0;
let cut = 0;
/** While pacing: each create's send time by (plant id − idStart), and the timed deliveries. */
let paced = null;

/** The path of an SSE stream, or of a tRPC subscription (as `httpSubscriptionLink` opens it). */
const pathOf = (trpc, types) =>
  trpc
    ? `/trpc/plants.events?input=${encodeURIComponent(JSON.stringify({ json: types ? { types: [types] } : {} }))}`
    : `/plants/events${types ? `?types=${types}` : ''}`;

/** One stream: the request written by hand, the answer read as bytes (the server writes whole frames). */
function openStream(url, sampled, types, trpc) {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const socket = connect({ host: hostname, port: Number(port) });
    const stream = { socket, sampled, rest: EMPTY, open: false };
    let head = EMPTY;
    socket.on('connect', () =>
      socket.write(
        `GET ${pathOf(trpc, types)} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n` +
          `Authorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`,
      ),
    );
    socket.on('data', (chunk) => {
      if (!stream.open) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf(HEADERS_END);
        if (end === -1) return;
        if (!head.toString('latin1', 0, 12).startsWith('HTTP/1.1 200')) {
          socket.destroy();
          return reject(new Error(`GET ${pathOf(trpc, types)} answered ${head.toString('latin1', 0, 12)}`));
        }
        stream.open = true;
        streams.push(stream);
        resolve();
        chunk = head.subarray(end + 2);
      }
      read(stream, chunk);
      if (!sampled) socket.pause(); // Read again in a while (below): what arrived meanwhile, one read.
    });
    socket.on('error', (error) => (stream.open ? undefined : reject(error)));
    socket.on('close', () => {
      if (stream.open) cut++;
      stream.open = false;
    });
  });
}

/**
 * Counts the whole frames of a chunk (those with an `id:` line: SSE's, whose data follows it, and
 * tRPC's, whose data comes first); on a sampled stream while pacing, times each one from its plant
 * id and `createdAt`. A frame cut by the chunk's end waits in `rest` (not the line breaks that end
 * most chunks: tRPC's third, HTTP's), so that a chunk is copied only when a frame straddles two.
 */
function read(stream, chunk) {
  const now = performance.now();
  const buf = stream.rest.length > 0 ? Buffer.concat([stream.rest, chunk]) : chunk;
  let from = 0;
  for (let end = buf.indexOf(FRAME_END); end !== -1; end = buf.indexOf(FRAME_END, from)) {
    const id = buf.indexOf(ID_LINE, from);
    if (id !== -1 && id < end && ++events && stream.sampled && paced) time(buf, from, end, now);
    from = end + FRAME_END.length;
  }
  while (from < buf.length && (buf[from] === 10 || buf[from] === 13)) from++;
  stream.rest = from === buf.length ? EMPTY : buf.subarray(from);
}

/** Times the frame at [from, end): its plant id is bare (SSE) or quoted (superjson's bigint). */
function time(buf, from, end, now) {
  const plant = buf.indexOf(PLANT_ID, from);
  const created = buf.indexOf(CREATED_AT, from);
  if (plant === -1 || plant > end || created === -1 || created > end) return;
  const digits = plant + PLANT_ID.length + (buf[plant + PLANT_ID.length] === 34 ? 1 : 0);
  const index = Number.parseInt(buf.toString('latin1', digits, digits + 20), 10) - paced.idStart;
  const at = created + CREATED_AT.length;
  if (index >= 0 && index < paced.total) {
    paced.fromSend.push(now - paced.sentAt[index]);
    paced.fromCommit.push(performance.timeOrigin + now - Date.parse(buf.toString('latin1', at, at + 24)));
  }
}

const timed = (values) =>
  values.length === 0 ? null : { count: values.length, ...percentiles(Float64Array.from(values).sort()) };

/** Creates at `rate`/s for `seconds`, each sent on its schedule whatever the earlier ones do. */
async function pace({ url, rate, seconds, idStart }) {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const total = rate * seconds;
  paced = { idStart, total, sentAt: new Float64Array(total), fromSend: [], fromCommit: [] };
  const open = streams.filter((s) => s.open);
  const expectedTimed = total * open.filter((s) => s.sampled).length;
  const tally = { sent: 0, ok: 0, notOk: 0, pending: 0 };
  const [eventsBefore, cutBefore] = [events, cut];
  const cpuBefore = process.cpuUsage();
  const sendOne = (index) => {
    paced.sentAt[index] = performance.now();
    tally.pending++;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const req = request(new URL('/plants', url), { method: 'POST', agent, headers }, (res) => {
      res.resume().on('end', () => {
        tally[res.statusCode === 200 ? 'ok' : 'notOk']++;
        tally.pending--;
      });
    });
    req.on('error', () => {
      tally.notOk++;
      tally.pending--;
    });
    req.end(`{"id":${idStart + index},"name":"Fern","tag":"bench"}`);
  };
  const started = performance.now();
  while (tally.sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * rate) / 1000) + 1);
    while (tally.sent < due) sendOne(tally.sent++);
    await new Promise((next) => setTimeout(next, 1));
  }
  const sendSeconds = (performance.now() - started) / 1000;
  // Let the answers and the last events arrive, for at most 5 s.
  const until = performance.now() + 5_000;
  const waiting = () =>
    tally.pending > 0 || paced.fromSend.length < expectedTimed || events < eventsBefore + total * open.length;
  while (waiting() && performance.now() < until) await new Promise((next) => setTimeout(next, 20));
  const cpu = process.cpuUsage(cpuBefore);
  agent.destroy();
  const result = {
    sent: tally.sent,
    rate: Math.round(tally.sent / sendSeconds),
    ok: tally.ok,
    notOk: tally.notOk,
    eventsReceived: events - eventsBefore,
    eventsExpected: total * open.length,
    streamsCut: cut - cutBefore,
    fromCommit: timed(paced.fromCommit),
    fromSend: timed(paced.fromSend),
    workerCpu: round2((cpu.user + cpu.system) / 1e6 / ((performance.now() - started) / 1000)),
  };
  paced = null;
  return result;
}

async function handle(message) {
  if (message.cmd === 'open') {
    const started = performance.now();
    // About 100 timed however many are open: timing is this process's largest cost.
    const sampleEvery = Math.max(SAMPLE_EVERY, Math.floor(message.streams / 100));
    // `trpc`% of them tRPC subscriptions, as many among the timed ones as among the others.
    const trpc = (i) => (i % sampleEvery === 0 ? i / sampleEvery : i) % 100 < message.trpc;
    // 50 at a time, as clients would connect, so that the accept queue never overflows.
    for (let i = 0; i < message.streams; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, message.streams - i) }, (_, k) =>
          openStream(message.url, (i + k) % sampleEvery === 0, message.types, trpc(i + k)),
        ),
      );
    }
    return { streams: streams.length, ms: Math.round(performance.now() - started) };
  }
  if (message.cmd === 'pace') return pace(message);
  if (message.cmd === 'counts') return { events, cut, open: streams.filter((s) => s.open).length };
  if (message.cmd === 'drop') {
    for (const stream of streams) {
      stream.open = false;
      stream.socket.destroy();
    }
    [streams, events, cut] = [[], 0, 0];
    return {};
  }
  throw new Error(`unknown command ${message.cmd}`);
}

// Streams not timed are read every 250 ms, a tenth of them every 25 ms: read as each write came,
// 10,000 streams cost this process more than the api its writes (p99 5.8-7 s, the api at 0.1 core).
let nextBurst = 0;
setInterval(() => {
  for (let i = nextBurst; i < streams.length; i += 10)
    if (streams[i].open && !streams[i].sampled) streams[i].socket.resume();
  nextBurst = (nextBurst + 1) % 10;
}, 25).unref();

let queue = Promise.resolve();
createInterface({ input: process.stdin })
  .on('line', (line) => {
    queue = queue
      .then(() => handle(JSON.parse(line)))
      .then((answer) => process.stdout.write(`${JSON.stringify({ event: 'answer', ...answer })}\n`))
      .catch((error) =>
        process.stdout.write(`${JSON.stringify({ event: 'error', message: error.message })}\n`),
      );
  })
  .on('close', () => process.exit(0));
