import {
  MAX_DELIVERIES_LIMIT,
  NewWebhookEndpointSchema,
  stringifyJson,
  type WebhookDelivery,
  WebhookDeliveryIdSchema,
  type WebhookEndpoint,
  WebhookEndpointIdSchema,
  WebhookEndpointPatchSchema,
} from '@plant-store/schema';
import {
  type Command,
  type Connection,
  callOptions,
  EXIT,
  type Output,
  parseEventTypes,
  printTable,
  report,
  UsageError,
  type Values,
} from './cli-support.ts';
import { createRestClient } from './rest.ts';
import { visible } from './terminal-text.ts';

/** `plants endpoints <subcommand>`: the token's own webhook endpoints, over the REST client. */
export const ENDPOINT_COMMANDS = new Map<string, Command>([
  ['add', { options: ['description', 'events'], operands: 1, needs: 'one URL', run: add }],
  ['list', { options: [], operands: 0, run: list }],
  [
    'update',
    {
      options: ['events', 'description', 'clear-description'],
      operands: 1,
      needs: 'one endpoint id',
      run: update,
    },
  ],
  ['rm', { options: [], operands: 1, needs: 'one endpoint id', run: remove }],
  ['rotate', { options: [], operands: 1, needs: 'one endpoint id', run: rotate }],
  [
    'deliveries',
    { options: ['limit', 'before', 'all'], operands: 1, needs: 'one endpoint id', run: deliveries },
  ],
  ['redeliver', { options: [], operands: 2, needs: 'an endpoint id and a delivery id', run: redeliver }],
  ['ping', { options: [], operands: 1, needs: 'one endpoint id', run: ping }],
]);

/** The page size of `deliveries --all`: the most the server answers at once. */
const ALL_PAGE = MAX_DELIVERIES_LIMIT;

async function add(connection: Connection, values: Values, [url]: string[], out: Output) {
  const parsed = NewWebhookEndpointSchema.safeParse({
    url,
    ...(values.description !== undefined && { description: values.description }),
    ...(values.events !== undefined && { events: parseEventTypes(values.events, '--events') }),
  });
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    throw new UsageError(
      `${issue?.path[0] === 'url' ? 'the URL' : `--${String(issue?.path[0])}`} ${issue?.message}.`,
    );
  }
  const endpoint = await createRestClient(connection).endpoints.create(parsed.data, callOptions());
  if (out.json) {
    out.print(stringifyJson(endpoint));
    return EXIT.ok;
  }
  out.print(`Added webhook endpoint ${endpoint.id} for ${visible(endpoint.url)}.`);
  out.print(`Signing secret: ${endpoint.secret}`);
  out.print(
    'Keep the secret now: it is not shown again. Receivers verify deliveries with it (Standard Webhooks).',
  );
  return EXIT.ok;
}

async function list(connection: Connection, _values: Values, _operands: string[], out: Output) {
  const endpoints = await createRestClient(connection).endpoints.list(callOptions());
  if (out.json) {
    out.print(stringifyJson(endpoints));
    return EXIT.ok;
  }
  if (endpoints.length === 0) {
    out.print('No webhook endpoints.');
    return EXIT.ok;
  }
  printTable(out, [ENDPOINT_HEADER, ...endpoints.map(endpointRow)]);
  return EXIT.ok;
}

async function update(connection: Connection, values: Values, [text]: string[], out: Output) {
  const id = parseEndpointId(text!);
  if (values.description !== undefined && values['clear-description']) {
    throw new UsageError('give --description or --clear-description, not both.');
  }
  const parsed = WebhookEndpointPatchSchema.safeParse({
    ...(values.events !== undefined && { events: parseEventTypes(values.events, '--events') }),
    ...(values.description !== undefined && { description: values.description }),
    ...(values['clear-description'] && { description: null }),
  });
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    throw new UsageError(`--${String(issue?.path[0])} ${issue?.message}.`);
  }
  if (Object.keys(parsed.data).length === 0) {
    throw new UsageError('endpoints update needs --events, --description or --clear-description.');
  }
  const endpoint = await createRestClient(connection).endpoints.update(id, parsed.data, callOptions());
  if (out.json) out.print(stringifyJson(endpoint));
  else printTable(out, [ENDPOINT_HEADER, endpointRow(endpoint)]);
  return EXIT.ok;
}

const ENDPOINT_HEADER = ['ID', 'URL', 'EVENTS', 'STATUS', 'CREATED', 'DESCRIPTION'];

function endpointRow({ id, url, events, description, createdAt, disabled }: WebhookEndpoint): string[] {
  return [
    id,
    visible(url),
    events.join(','),
    // A disabled endpoint is sent nothing (its token revoked, without read, or an operator's choice).
    disabled === null ? 'active' : `disabled (${visible(disabled.reason)})`,
    createdAt,
    visible(description ?? ''),
  ];
}

async function remove(connection: Connection, _values: Values, [text]: string[], out: Output) {
  const id = parseEndpointId(text!);
  await createRestClient(connection).endpoints.delete(id, callOptions());
  out.print(out.json ? stringifyJson({ id, deleted: true }) : `Deleted webhook endpoint ${id}.`);
  return EXIT.ok;
}

async function rotate(connection: Connection, _values: Values, [text]: string[], out: Output) {
  const rotated = await createRestClient(connection).endpoints.rotateSecret(
    parseEndpointId(text!),
    callOptions(),
  );
  if (out.json) {
    out.print(stringifyJson(rotated));
    return EXIT.ok;
  }
  out.print(`New signing secret for ${rotated.id}: ${rotated.secret}`);
  out.print(`The previous secret keeps signing alongside it until ${rotated.previousSecretExpiresAt}.`);
  out.print('Keep the new secret now: it is not shown again.');
  return EXIT.ok;
}

async function deliveries(connection: Connection, values: Values, [text]: string[], out: Output) {
  const id = parseEndpointId(text!);
  const limit = values.limit === undefined ? (values.all ? ALL_PAGE : undefined) : parseLimit(values.limit);
  let before = values.before === undefined ? undefined : parseDeliveryId(values.before, '--before');
  const client = createRestClient(connection);
  let shown = 0;
  // Delivery ids are random, so a cursor cannot be checked to advance: the ones read are kept.
  const read = new Set<string | undefined>([before]);
  // Pages are printed as they come (fixed column widths): --all holds one page at a time.
  do {
    const page = await client.endpoints.deliveries(id, { limit, before }, callOptions());
    if (!out.json && shown === 0 && page.deliveries.length > 0) out.print(deliveryRow(DELIVERY_HEADER));
    for (const delivery of page.deliveries)
      out.print(out.json ? stringifyJson(delivery) : deliveryLine(delivery));
    shown += page.deliveries.length;
    before = page.next;
    if (values.all && before !== undefined && read.has(before)) {
      report(`plants: the server's next page (--before ${before}) is one already shown: stopped.`);
      return EXIT.failed;
    }
    read.add(before);
  } while (values.all && before !== undefined);
  if (!out.json && shown === 0) out.print('No deliveries.');
  if (before !== undefined) {
    report(`More deliveries follow: plants endpoints deliveries ${id} --before ${before} (or --all)`);
  }
  return EXIT.ok;
}

async function redeliver(
  connection: Connection,
  _values: Values,
  [endpoint, delivery]: string[],
  out: Output,
) {
  const id = parseEndpointId(endpoint!);
  const deliveryId = parseDeliveryId(delivery!, 'the delivery id');
  showDelivery(await createRestClient(connection).endpoints.redeliver(id, deliveryId, callOptions()), out);
  return EXIT.ok;
}

async function ping(connection: Connection, _values: Values, [text]: string[], out: Output) {
  showDelivery(await createRestClient(connection).endpoints.ping(parseEndpointId(text!), callOptions()), out);
  return EXIT.ok;
}

function showDelivery(delivery: WebhookDelivery, out: Output): void {
  if (out.json) {
    out.print(stringifyJson(delivery));
    return;
  }
  out.print(deliveryRow(DELIVERY_HEADER));
  out.print(deliveryLine(delivery));
}

const DELIVERY_HEADER = ['ID', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST CODE', 'NEXT ATTEMPT'];

/** A delivery as a row; `-` for no response code yet, and for no attempt due (delivered or failed). */
function deliveryLine(delivery: WebhookDelivery): string {
  const { id, event, status, attempts, lastResponseCode, nextAttemptAt } = delivery;
  return deliveryRow([
    id,
    event,
    status,
    String(attempts),
    String(lastResponseCode ?? '-'),
    nextAttemptAt ?? '-',
  ]);
}

/**
 * Every column has a bound (a msg_ id, the event and status names, an int32, a status code, an ISO
 * time), so fixed widths align rows printed page by page.
 */
function deliveryRow([id, event, status, attempts, code, next]: string[]): string {
  return [
    id!.padEnd(36),
    event!.padEnd(13),
    status!.padEnd(9),
    attempts!.padStart(8),
    code!.padStart(9),
    next,
  ].join('  ');
}

function parseEndpointId(text: string): string {
  if (WebhookEndpointIdSchema.safeParse(text).success) return text;
  throw new UsageError(`the endpoint id must be we_ and 24 hex digits ("${visible(text)}").`);
}

function parseDeliveryId(text: string, what: string): string {
  if (WebhookDeliveryIdSchema.safeParse(text).success) return text;
  throw new UsageError(`${what} must be a delivery id, msg_ and 32 hex digits ("${visible(text)}").`);
}

function parseLimit(text: string): number {
  const limit = /^[0-9]{1,9}$/.test(text) ? Number(text) : 0;
  if (limit >= 1 && limit <= MAX_DELIVERIES_LIMIT) return limit;
  throw new UsageError(`--limit must be an integer from 1 to ${MAX_DELIVERIES_LIMIT} ("${text}").`);
}
