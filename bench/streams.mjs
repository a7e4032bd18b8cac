// The event-stream worker of `pnpm bench events`: holds N open `GET /plants/events` streams (SSE)
// and, when told, sends creates at a fixed rate (open loop) while timing each event's delivery on
// a sample of the streams. A separate process, pinned to the load core, so reading 1,000 streams
// costs the harness nothing. Commands arrive as JSON lines on stdin, answers leave as JSON lines on
// stdout:
//
//   {"cmd":"open","url","token","streams","sampleEvery"}  → {"event":"open","streams","ms"}
//   {"cmd":"pace","url","token","rate","seconds","idStart"} → {"event":"paced",…figures}
//   {"cmd":"counts"}                                      → {"event":"counts","events","cut"}
//   {"cmd":"close"}                                       → {"event":"closed"}, then exit
//
// Latency: every create's send time is kept by its plant id (the ids are ours, one counter); a
// sampled stream parses each event's `data:` and records (its arrival − the send time of that
// plant's create: the figure judged, an upper bound on commit-to-delivery since the commit happens
// after the send), (arrival − the create's 200 at the client: mostly negative, events tend to
// arrive first) and (arrival − the event's `createdAt`, the server's commit-time stamp, same
// machine clock, ms precision). Unsampled streams only count events.
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';

const streams = [];
let totalEvents = 0;
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

function openStream(url, token, sampled) {
  return new Promise((resolve, reject) => {
    const target = new URL('/plants/events', url);
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        agent: false,
        headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`GET /plants/events answered ${res.statusCode}`));
          return;
        }
        const stream = { res, sampled, buffered: '', tail: EMPTY, events: 0, open: true };
        streams.push(stream);
        if (sampled) res.setEncoding('utf8');
        let first = true;
        res.on('data', (chunk) => {
          if (first) {
            first = false;
            resolve(stream);
          }
          if (sampled) readSampled(stream, chunk);
          else countEvents(stream, chunk);
        });
        res.on('close', () => {
          if (stream.open) cut++;
          stream.open = false;
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Each event has one `id:` line, after the `\n` ending the frame before it (`retry:` comes first). */
const ID_LINE = Buffer.from('\nid: ');
const EMPTY = Buffer.alloc(0);

/** Counts the events in the raw bytes, without decoding them, across chunk boundaries. */
function countEvents(stream, chunk) {
  let n = 0;
  for (let at = chunk.indexOf(ID_LINE); at !== -1; at = chunk.indexOf(ID_LINE, at + ID_LINE.length)) n++;
  if (stream.tail.length > 0) {
    // One that straddles the boundary: the last 4 bytes before it and the first 4 after.
    const joint = Buffer.concat([stream.tail, chunk.subarray(0, ID_LINE.length - 1)]);
    if (joint.indexOf(ID_LINE) !== -1) n++;
  }
  stream.tail = Buffer.from(chunk.subarray(Math.max(0, chunk.length - (ID_LINE.length - 1))));
  stream.events += n;
  totalEvents += n;
}

function readSampled(stream, chunk) {
  const now = performance.now();
  const wall = wallNow();
  const text = stream.buffered + chunk;
  let start = 0;
  for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n', start)) {
    const frame = text.slice(start, end);
    start = end + 2;
    const dataAt = frame.indexOf('\ndata: ');
    if (!frame.startsWith('id: ') || dataAt === -1) continue;
    stream.events++;
    totalEvents++;
    if (!paced) continue;
    const event = JSON.parse(frame.slice(dataAt + 7));
    if (event.type !== 'plant.created') continue;
    const index = event.plant.id - paced.idStart;
    if (!(index >= 0 && index < paced.total)) continue;
    paced.index.push(index);
    paced.arrived.push(now);
    paced.fromCommit.push(wall - Date.parse(event.createdAt));
  }
  stream.buffered = text.slice(start);
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
  for (let i = 0; i < paced.index.length; i++) {
    fromSend.push(paced.arrived[i] - paced.sentAt[paced.index[i]]);
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
    streamsCut: cut - cutBefore,
    sampledStreams: streams.filter((s) => s.sampled).length,
    sampledEvents: paced.index.length,
    sampledExpected: expectedSampled,
    latencyFromSend: percentiles(fromSend),
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
      opening.push(openStream(message.url, message.token, i % message.sampleEvery === 0));
      // A few at a time, as clients would connect, and so the accept queue never overflows.
      if (opening.length % 50 === 0) await Promise.all(opening.slice(-50));
    }
    await Promise.all(opening);
    emit({ event: 'open', streams: streams.length, ms: Math.round(performance.now() - started) });
  } else if (message.cmd === 'pace') {
    emit(await pace(message));
  } else if (message.cmd === 'counts') {
    emit({ event: 'counts', events: totalEvents, cut, open: streams.filter((s) => s.open).length });
  } else if (message.cmd === 'close') {
    for (const stream of streams) {
      stream.open = false;
      stream.res.destroy();
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
