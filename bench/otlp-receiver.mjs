// The collector of the bench's tracing scenarios: a node:http OTLP/HTTP receiver on loopback that
// takes every POST /v1/traces (protobuf), answers 200 at once, and counts requests, bytes and
// spans (read from the protobuf's framing, not decoded). GET /count answers the counts so far.
//
//   PORT=… node bench/otlp-receiver.mjs
import { createServer } from 'node:http';

const counts = { requests: 0, bytes: 0, spans: 0 };
createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/count') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify(counts));
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    counts.requests++;
    counts.bytes += body.length;
    counts.spans += countSpans(body);
    res.writeHead(200, { 'content-type': 'application/x-protobuf' });
    res.end();
  });
}).listen(Number(process.env.PORT ?? 4318), '127.0.0.1');

/**
 * Spans in an ExportTraceServiceRequest: field 1 (ResourceSpans) → field 2 (ScopeSpans) → field 2
 * (Span), each length-delimited; everything else is skipped by its wire type.
 */
function countSpans(buffer) {
  let spans = 0;
  const walk = (start, end, path) => {
    let at = start;
    while (at < end) {
      let tag;
      [tag, at] = varint(buffer, at);
      const field = tag >>> 3;
      const wire = tag & 7;
      if (wire === 0) [, at] = varint(buffer, at);
      else if (wire === 1) at += 8;
      else if (wire === 5) at += 4;
      else if (wire === 2) {
        let length;
        [length, at] = varint(buffer, at);
        const expected = [1, 2, 2][path.length];
        if (field === expected) {
          if (path.length === 2) spans++;
          else walk(at, at + length, [...path, field]);
        }
        at += length;
      } else return;
    }
  };
  walk(0, buffer.length, []);
  return spans;
}

function varint(buffer, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = buffer[at++];
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, at];
    shift += 7;
  }
}
