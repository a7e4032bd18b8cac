import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/** OpenTelemetry's own definitions (opentelemetry-proto v1.10.0, Apache-2.0), copied beside this file. */
const PROTO_ROOT = fileURLToPath(new URL('./otlp-proto/', import.meta.url));

/** A span as the collector received it, in either encoding; ids in hex, `parentSpanId` '' for a root. */
export type ReceivedSpan = {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  service: string;
  scope: string;
};

export const SpanKind = { internal: 1, server: 2, client: 3 } as const;

export type OtlpReceiver = {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT (spans arrive at /v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Every export request: its path, content type, and body as text (protobuf decoded lossily). */
  requests: { path: string; contentType: string; raw: Buffer }[];
  /** Resolves with the spans once `predicate` holds for them; rejects after `timeoutMs`. */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
};

type AnyValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
};
type KeyValue = { key: string; value?: AnyValue };
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: KeyValue[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
};
type ExportRequest = {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { scope?: { name?: string }; spans?: OtlpSpan[] }[];
  }[];
};

/**
 * An OTLP/HTTP trace collector on loopback, as the OpenTelemetry Collector's receiver takes
 * spans: `POST /v1/traces`, `application/x-protobuf` (decoded with OpenTelemetry's proto
 * definitions) or `application/json` (OTLP/JSON: ids in hex). Answers 200 with an empty
 * ExportTraceServiceResponse. On `port`, else an ephemeral one.
 */
export async function startOtlpReceiver({ port = 0 }: { port?: number } = {}): Promise<OtlpReceiver> {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => PROTO_ROOT + target;
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  const Request = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const waiters = new Set<() => void>();

  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    const contentType = req.headers['content-type'] ?? '';
    requests.push({ path: req.url ?? '', contentType, raw });
    let request: ExportRequest;
    let hexIds = true;
    if (contentType.startsWith('application/x-protobuf')) {
      request = Request.toObject(Request.decode(raw), { longs: String, enums: Number, bytes: String });
      hexIds = false;
    } else {
      request = JSON.parse(raw.toString('utf8')) as ExportRequest;
    }
    const id = (value: string | undefined) =>
      value === undefined || value === ''
        ? ''
        : hexIds
          ? value
          : Buffer.from(value, 'base64').toString('hex');
    for (const resourceSpans of request.resourceSpans ?? []) {
      const resource = attributesOf(resourceSpans.resource?.attributes);
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        for (const span of scopeSpans.spans ?? []) {
          spans.push({
            traceId: id(span.traceId),
            spanId: id(span.spanId),
            parentSpanId: id(span.parentSpanId),
            name: span.name,
            kind: span.kind ?? 0,
            attributes: attributesOf(span.attributes),
            links: (span.links ?? []).map((link) => ({ traceId: id(link.traceId), spanId: id(link.spanId) })),
            status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
            service: String(resource['service.name']),
            scope: scopeSpans.scope?.name ?? '',
          });
        }
      }
    }
    res.statusCode = 200;
    res.setHeader(
      'content-type',
      contentType.startsWith('application/json') ? 'application/json' : contentType,
    );
    res.end(contentType.startsWith('application/json') ? '{}' : '');
    for (const wake of waiters) wake();
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: listening } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${listening}`,
    spans,
    requests,
    waitFor(predicate, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(spans)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(spans);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `spans not received within ${timeoutMs} ms; got: ${spans.map((s) => s.name).join(', ')}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function attributesOf(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const attributes: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    if (value?.stringValue !== undefined) attributes[key] = value.stringValue;
    else if (value?.boolValue !== undefined) attributes[key] = value.boolValue;
    else if (value?.intValue !== undefined) attributes[key] = Number(value.intValue);
    else if (value?.doubleValue !== undefined) attributes[key] = value.doubleValue;
  }
  return attributes;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
