// The event-stream worker of `pnpm bench events`: holds N open `GET /plants/events` streams (SSE)
// and, when told, sends creates at a fixed rate (open loop) while timing each event's delivery on
// a sample of the streams. A separate process, pinned to the load core, so reading 1,000 streams
// costs the harness nothing. Commands arrive as JSON lines on stdin, answers leave as JSON lines on
// stdout:
//
//   {"cmd":"open","url","token","streams","sampleEvery","types"?} → {"event":"open","streams","ms"}
//     (`types`: `GET /plants/events?types=…`, only those types of event)
//   {"cmd":"pace","url","token","rate","seconds","idStart"} → {"event":"paced",…figures}
//   {"cmd":"counts"}                                      → {"event":"counts","events","cut"}
//   {"cmd":"drop"}                                        → {"event":"dropped"}: every stream closed
//     by the worker (not counted as cut), the counters back to 0
//   {"cmd":"close"}                                       → {"event":"closed"}, then exit
//
// Latency: every create's send time is kept by its plant id (the ids are ours, one counter); a
// sampled stream reads each event's plant id and `createdAt` from the bytes and records (its
// arrival − the send time of that plant's create: the figure judged, an upper bound on
// commit-to-delivery since the commit happens after the send), (arrival − the create's 200 at the client: mostly negative, events tend to
// arrive first) and (arrival − the event's `createdAt`, the server's commit-time stamp, same
// machine clock, ms precision). Unsampled streams only count events (`\nid: ` in the raw bytes).
// The streams are plain sockets, not node:http: at 1,000 streams × 1,000 events/s, node:http's
// parser and the text decoding were a third of this process's time.
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';

const streams = [];
let totalEvents = 0;
/** Reads (`data` callbacks) over all streams: the server's writes per stream, coalesced by TCP at most. */
let totalChunks = 0;
let cut = 0;
/**
 * While pacing: each create's send time and the arrival of its 200 (performance.now() ms), by
 * (plant id − idStart); and each timed delivery on a sampled stream (create index, arrival, and
 * arrival − `createdAt` in wall-clock ms).
 */
let paced = null;

function emit(event) {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

/** Wall-clock ms with sub-ms precision, comparable with the server's `createdAt`. */
const wallNow = () => performance.timeOrigin + performance.now();

/**
 * One stream on a plain TCP socket: the request written by hand and the response read as bytes,
 * so that reading 1,000 streams costs no HTTP parser, no chunked decoding and no text decoding.
 * The server writes whole frames per HTTP chunk, so counting `\nid: ` in the raw bytes counts the
 * events exactly (the chunk-size line before the first frame of a chunk ends in `\r\n` too).
 */
function openStream(url, token, sampled, types) {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const socket = connect({ host: hostname, port: Number(port) });
    socket.setNoDelay(true);
    const stream = { socket, sampled, rest: EMPTY, tail: EMPTY, events: 0, open: false };
    let head = EMPTY;
    socket.on('connect', () =>
      socket.write(
        `GET /plants/events${types ? `?types=${types}` : ''} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n` +
          `Authorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`,
      ),
    );
    socket.on('data', (chunk) => {
      if (!stream.open) {
        // The status line and headers, possibly with the first frames behind them.
        head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
        const end = head.indexOf(HEADERS_END);
        if (end === -1) return;
        if (!head.subarray(0, 13).toString('latin1').startsWith('HTTP/1.1 200')) {
          socket.destroy();
          reject(new Error(`GET /plants/events answered ${head.subarray(0, 12).toString('latin1')}`));
          return;
        }
        stream.open = true;
        streams.push(stream);
        resolve(stream);
        chunk = head.subarray(end + 2);
        head = EMPTY;
      }
      totalChunks++;
      if (sampled) readSampled(stream, chunk);
      else countEvents(stream, chunk);
    });
    socket.on('error', (error) => {
      if (!stream.open) reject(error);
    });
    socket.on('close', () => {
      if (stream.open) cut++;
      stream.open = false;
    });
  });
}

/** Each event has one `id:` line, after the `\n` ending the frame (or chunk-size line) before it. */
const ID_LINE = Buffer.from('\nid: ');
const HEADERS_END = Buffer.from('\r\n\r\n');
const PLANT_ID = Buffer.from('"plant":{"id":');
const CREATED_AT = Buffer.from('"createdAt":"');
const FRAME_END = Buffer.from('\n\n');
const EMPTY = Buffer.alloc(0);

/** Whether an `\nid: ` begins in the last bytes of `tail` and ends in the first of `chunk`. */
function straddles(tail, chunk) {
  for (let k = Math.min(tail.length, ID_LINE.length - 1); k >= 1; k--) {
    let match = chunk.length >= ID_LINE.length - k;
    for (let i = 0; match && i < k; i++) match = tail[tail.length - k + i] === ID_LINE[i];
    for (let i = k; match && i < ID_LINE.length; i++) match = chunk[i - k] === ID_LINE[i];
    if (match) return true;
  }
  return false;
}

/** Counts the events in the raw bytes, without decoding them, across chunk boundaries. */
function countEvents(stream, chunk) {
  let n = 0;
  for (let at = chunk.indexOf(ID_LINE); at !== -1; at = chunk.indexOf(ID_LINE, at + ID_LINE.length)) n++;
  if (stream.tail.length > 0 && straddles(stream.tail, chunk)) n++;
  stream.tail = chunk.subarray(Math.max(0, chunk.length - (ID_LINE.length - 1)));
  stream.events += n;
  totalEvents += n;
}

/** The digits of a non-negative integer in `buf` from `at` on, as a number (plant ids here < 2^53). */
function digitsAt(buf, at) {
  let value = 0;
  for (let c = buf[at]; c >= 48 && c <= 57; c = buf[++at]) value = value * 10 + (c - 48);
  return value;
}

/**
 * A timed stream: each whole frame's plant id and `createdAt`, read from the bytes (no JSON.parse:
 * 100 streams × 1,000 events/s of it would be the reader's largest cost). A frame cut by a chunk
 * boundary waits in `rest` for the next chunk.
 */
function readSampled(stream, chunk) {
  const now = performance.now();
  const wall = wallNow();
  const buf = stream.rest.length === 0 ? chunk : Buffer.concat([stream.rest, chunk]);
  let at = buf.indexOf(ID_LINE);
  stream.rest = EMPTY;
  while (at !== -1) {
    const end = buf.indexOf(FRAME_END, at + ID_LINE.length);
    if (end === -1) {
      stream.rest = buf.subarray(at);
      break;
    }
    stream.events++;
    totalEvents++;
    const next = buf.indexOf(ID_LINE, end);
    if (paced) {
      const plant = buf.indexOf(PLANT_ID, at);
      const created = buf.indexOf(CREATED_AT, at);
      if (plant !== -1 && plant < end && created !== -1 && created < end) {
        const index = digitsAt(buf, plant + PLANT_ID.length) - paced.idStart;
        if (index >= 0 && index < paced.total) {
          const from = created + CREATED_AT.length;
          paced.index.push(index);
          paced.arrived.push(now);
          paced.fromCommit.push(wall - Date.parse(buf.toString('latin1', from, from + 24)));
        }
      }
    }
    at = next;
  }
  // A frame's `\nid: ` itself may be cut: keep the last bytes when no frame is pending.
  if (stream.rest.length === 0 && buf.length > 0 && buf.lastIndexOf(10) >= buf.length - 4)
    stream.rest = buf.subarray(buf.lastIndexOf(10));
}

function percentiles(values) {
  if (values.length === 0) return null;
  const sorted = Float64Array.from(values).sort();
  const at = (q) =>
    Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 100) / 100;
  return { count: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
}

/** Creates at `rate`/s for `seconds`, each sent on its schedule whatever the earlier ones do. */
async function pace({ url, token, rate, seconds, idStart }) {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const target = new URL('/plants', url);
  const total = rate * seconds;
  paced = {
    idStart,
    total,
    sentAt: new Float64Array(total),
    answeredAt: new Float64Array(total).fill(Number.NaN),
    index: [],
    arrived: [],
    fromCommit: [],
  };
  const expectedSampled = total * streams.filter((s) => s.sampled && s.open).length;
  const tally = { ok: 0, other: 0, errors: 0, lateMax: 0 };
  let pending = 0;
  let sent = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const eventsBefore = totalEvents;
  const chunksBefore = totalChunks;
  const cutBefore = cut;
  const sendOne = (index) => {
    const body = `{"id":${idStart + index},"name":"Fern","tag":"bench"}`;
    paced.sentAt[index] = performance.now();
    pending++;
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: '/plants',
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          paced.answeredAt[index] = performance.now();
          if (res.statusCode === 200) tally.ok++;
          else tally.other++;
          pending--;
        });
      },
    );
    req.on('error', () => {
      tally.errors++;
      pending--;
    });
    req.end(body);
  };
  await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - started) * rate) / 1000) + 1);
      if (due > sent + 1) tally.lateMax = Math.max(tally.lateMax, ((due - sent - 1) * 1000) / rate);
      while (sent < due) sendOne(sent++);
      if (sent >= total) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  const sendSeconds = (performance.now() - started) / 1000;
  // Let the answers and the last events arrive (bounded).
  const drainUntil = performance.now() + 5_000;
  while ((pending > 0 || paced.index.length < expectedSampled) && performance.now() < drainUntil)
    await new Promise((r) => setTimeout(r, 20));
  const cpu = process.cpuUsage(cpuBefore);
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  const fromSend = [];
  const fromAnswer = [];
  /** Latency from send by the second the create was sent in: a start-up tail shows in the first. */
  const bySecond = Array.from({ length: seconds }, () => []);
  const commitBySecond = Array.from({ length: seconds }, () => []);
  for (let i = 0; i < paced.index.length; i++) {
    fromSend.push(paced.arrived[i] - paced.sentAt[paced.index[i]]);
    const second = Math.min(seconds - 1, Math.floor(paced.index[i] / rate));
    bySecond[second].push(fromSend.at(-1));
    commitBySecond[second].push(paced.fromCommit[i]);
    const answered = paced.answeredAt[paced.index[i]];
    if (!Number.isNaN(answered)) fromAnswer.push(paced.arrived[i] - answered);
  }
  const result = {
    event: 'paced',
    rate,
    seconds,
    sent,
    sendSeconds: Math.round(sendSeconds * 1000) / 1000,
    achievedRate: Math.round((sent / sendSeconds) * 10) / 10,
    ok: tally.ok,
    other: tally.other,
    errors: tally.errors,
    pendingAtEnd: pending,
    maxSendLagMs: Math.round(tally.lateMax * 100) / 100,
    eventsReceived: totalEvents - eventsBefore,
    eventsExpected: total * streams.filter((s) => s.open).length,
    // Events per read on a stream: how much the server coalesced (and TCP joined) per write.
    eventsPerRead:
      Math.round(((totalEvents - eventsBefore) / Math.max(1, totalChunks - chunksBefore)) * 10) / 10,
    streamsCut: cut - cutBefore,
    sampledStreams: streams.filter((s) => s.sampled).length,
    sampledEvents: paced.index.length,
    sampledExpected: expectedSampled,
    latencyFromSend: percentiles(fromSend),
    p99FromSendBySecond: bySecond.map((values) => percentiles(values)?.p99 ?? null),
    // The same from `createdAt`: where the two differ, the time went before the commit.
    p99FromCommitBySecond: commitBySecond.map((values) => percentiles(values)?.p99 ?? null),
    // Negative when the event arrived before the create's own answer (the usual case).
    latencyFromAnswer: percentiles(fromAnswer),
    latencyFromCommit: percentiles(paced.fromCommit),
    workerCpu: Math.round(((cpu.user + cpu.system) / 1e6 / elapsed) * 1000) / 1000,
  };
  paced = null;
  return result;
}

async function handle(message) {
  if (message.cmd === 'open') {
    const started = performance.now();
    const opening = [];
    for (let i = 0; i < message.streams; i++) {
      opening.push(openStream(message.url, message.token, i % message.sampleEvery === 0, message.types));
      // A few at a time, as clients would connect, and so the accept queue never overflows.
      if (opening.length % 50 === 0) await Promise.all(opening.slice(-50));
    }
    await Promise.all(opening);
    emit({ event: 'open', streams: streams.length, ms: Math.round(performance.now() - started) });
  } else if (message.cmd === 'pace') {
    emit(await pace(message));
  } else if (message.cmd === 'counts') {
    emit({ event: 'counts', events: totalEvents, cut, open: streams.filter((s) => s.open).length });
  } else if (message.cmd === 'drop') {
    for (const stream of streams.splice(0)) {
      stream.open = false;
      stream.socket.destroy();
    }
    totalEvents = 0;
    totalChunks = 0;
    cut = 0;
    emit({ event: 'dropped' });
  } else if (message.cmd === 'close') {
    for (const stream of streams) {
      stream.open = false;
      stream.socket.destroy();
    }
    emit({ event: 'closed' });
    process.exit(0);
  }
}

const lines = createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on('line', (line) => {
  if (line.trim() === '') return;
  queue = queue
    .then(() => handle(JSON.parse(line)))
    .catch((error) => emit({ event: 'error', message: error.message }));
});
lines.on('close', () => process.exit(0));
