import { type ParseArgsConfig, parseArgs } from 'node:util';
import { isConfiguredTokenName, newTokenSecret, tokenDigest } from '../auth/tokens.ts';
import { ALL_SCOPES, isScope } from '../auth/scopes.ts';
import type { Config } from '../config/config.ts';
import { IssuerSchema } from '../config/identity.ts';
import type { PrincipalId } from '../store/contract.ts';
import { isSchemaVersion } from '../store/migration-runner.ts';
import { LATEST_VERSION } from '../store/migrations.ts';
import { migrateStore, openStore } from '../store/open-store.ts';
import type { PlantStore } from '../store/contract.ts';
import {
  deleteEndpoint,
  disableEndpoint,
  enableEndpoint,
  listEndpoints,
  listFailedDeliveries,
  type Outcome,
} from './webhook-commands.ts';

export const USAGE = `Usage: main.js [command]
  (none)                                     serve the api
  migrate [--to N]                           apply pending store migrations; with --to, take the schema
                                             to version N instead, reverting newer ones (0: none)
  token create --name NAME [--scope read|write|webhooks|metrics]...   issue a token (read and write
                                             unless given; metrics: scrape /metrics); prints it once;
                                             api-token-… names and generated are reserved for
                                             configured tokens
  token list                                 list issued tokens (never their secrets)
  token revoke --name NAME...                revoke tokens and disable their webhook endpoints (every
                                             instance stops accepting them within TOKEN_REFRESH_MS)
  principal block --issuer URL --subject SUB...   cut off principals of an identity provider: every
                                             instance refuses their JWTs and ends their event
                                             streams within TOKEN_REFRESH_MS; their webhook
                                             endpoints are disabled now
  principal unblock --issuer URL --subject SUB...  accept them again (endpoints stay disabled)
  principal list                             list blocked principals
  webhooks failed [--limit N]                list webhook deliveries that used up their attempts
  webhooks endpoints [--owner NAME]          list registered webhook endpoints (of one token name),
                                             with pending and failed counts; never their secrets
  webhooks disable --id ID...                disable endpoints: nothing more is sent to them, their
                                             pending deliveries fail
  webhooks enable --id ID...                 enable disabled endpoints again (each is delivered to
                                             only while its token is active with the read scope)
  webhooks delete --id ID...                 delete endpoints and their deliveries
  help, --help, -h                           show this help

Options that name what to act on (revoke's --name, --id, block's --subject) or a list (--scope) may be repeated:
every value is acted on in turn, each reported on its own line, and the exit status is 1 if any
failed. Any other option given twice is refused (exit 2), and so is a bad value: nothing is done.

Configuration comes from the environment (DATABASE_URL, API_TOKENS, …): see the README.
Exit status: 0 done, 1 failed (e.g. the store is unreachable), 2 bad configuration or usage.`;

/** A command's wrong usage: exit 2 with the message and the usage. */
export class UsageError extends Error {}

/** Runs one administrative command against the configured store; resolves with the exit code. */
export async function runCommand(config: Config, [command, sub, ...args]: string[]): Promise<number> {
  if (command === 'migrate') {
    const { to } = parse(sub === undefined ? [] : [sub, ...args], { to: { type: 'string' } });
    const version = to === undefined ? undefined : Number(to);
    if (version !== undefined && !(/^\d+$/.test(to as string) && isSchemaVersion(version))) {
      throw new UsageError(`--to must be a schema version: 0 to ${LATEST_VERSION}`);
    }
    // One JSON line for deploy scripts: the versions this run applied (none when already current),
    // and with --to the versions it reverted.
    const { applied, reverted } = await migrateStore(config.store, { to: version });
    const line = version === undefined ? { migrated: true, applied } : { migrated: true, applied, reverted };
    process.stdout.write(`${JSON.stringify(line)}\n`);
    return 0;
  }
  if (command === 'token' && sub === 'create') return withStore(config, (store) => createToken(store, args));
  if (command === 'token' && sub === 'list') {
    parse(args, {});
    return withStore(config, listTokens);
  }
  if (command === 'token' && sub === 'revoke') return withStore(config, (store) => revokeToken(store, args));
  if (command === 'principal' && (sub === 'block' || sub === 'unblock')) {
    const { issuer, subjects } = principalArgs(args);
    return withStore(config, (store) =>
      eachIn(subjects, (subject) => changeBlock(store, sub, { issuer, subject })),
    );
  }
  if (command === 'principal' && sub === 'list') {
    parse(args, {});
    return withStore(config, async (store) => {
      for (const row of await store.principals.list()) {
        const line = { issuer: row.issuer, subject: row.subject, blockedAt: row.blockedAt.toISOString() };
        process.stdout.write(`${JSON.stringify(line)}\n`);
      }
      return 0;
    });
  }
  if (command === 'webhooks' && sub === 'failed') {
    const { limit } = parse(args, { limit: { type: 'string', default: '100' } });
    const n = Number(limit);
    if (!Number.isInteger(n) || n < 1) throw new UsageError('--limit must be a positive integer');
    return withStore(config, async (store) => {
      const { lines, summary } = await listFailedDeliveries(store.deliveries, { limit: n });
      for (const line of lines) process.stdout.write(`${line}\n`);
      process.stderr.write(`${summary}\n`);
      return 0;
    });
  }
  if (command === 'webhooks' && sub === 'endpoints') {
    const { owner } = parse(args, { owner: { type: 'string' } });
    return withStore(config, async (store) => {
      const lines = await listEndpoints(store.webhookEndpoints, { owner: owner as string | undefined });
      for (const line of lines) process.stdout.write(`${line}\n`);
      return 0;
    });
  }
  if (command === 'webhooks' && (sub === 'disable' || sub === 'enable' || sub === 'delete')) {
    const ids = named(parse(args, { id: { type: 'string', multiple: true } }).id, '--id');
    const bad = ids.find((id) => !/^we_[0-9a-f]{24}$/.test(id));
    if (bad !== undefined) {
      throw new UsageError(`--id must be a webhook endpoint id (we_ and 24 hex digits): "${bad}"`);
    }
    const change = { disable: disableEndpoint, enable: enableEndpoint, delete: deleteEndpoint }[sub];
    return withStore(config, (store) => eachIn(ids, (id) => change(store, id)));
  }
  throw new UsageError(`Unknown command "${[command, sub, ...args].filter(Boolean).join(' ')}"`);
}

/** `--issuer URL` once and `--subject SUB` at least once: nothing is done when either is wrong. */
function principalArgs(args: string[]): { issuer: string; subjects: string[] } {
  const values = parse(args, { issuer: { type: 'string' }, subject: { type: 'string', multiple: true } });
  const issuer = values.issuer;
  if (typeof issuer !== 'string' || !IssuerSchema.shape.issuer.safeParse(issuer).success) {
    throw new UsageError('--issuer is required: the issuer URL exactly as tokens name it (their iss claim)');
  }
  const subjects = named(values.subject, '--subject');
  const bad = subjects.find((subject) => subject.length === 0 || subject.length > 255);
  if (bad !== undefined) throw new UsageError('--subject must be 1 to 255 characters');
  return { issuer, subjects };
}

async function changeBlock(
  store: PlantStore,
  sub: 'block' | 'unblock',
  principal: PrincipalId,
): Promise<Outcome> {
  const who = `Principal "${principal.subject}" of ${principal.issuer}`;
  if (sub === 'unblock') {
    return (await store.principals.unblock(principal))
      ? {
          message: `${who} unblocked: running instances accept it again within TOKEN_REFRESH_MS; its webhook endpoints stay disabled until enabled.`,
          code: 0,
        }
      : { message: `${who} is not blocked.`, code: 1 };
  }
  const blocked = await store.principals.block(principal);
  if (blocked === undefined) return { message: `${who} is already blocked.`, code: 1 };
  const n = blocked.endpointsDisabled;
  return {
    message: `${who} blocked, and its ${n} webhook endpoint${n === 1 ? '' : 's'} disabled; running instances refuse its tokens, and end its event streams, within TOKEN_REFRESH_MS.`,
    code: 0,
  };
}

async function createToken(store: PlantStore, args: string[]): Promise<number> {
  const { name, scope } = parse(args, {
    name: { type: 'string' },
    scope: { type: 'string', multiple: true },
  });
  if (typeof name !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(name)) {
    throw new UsageError('--name is required: 1 to 64 letters, digits, ".", "_" or "-"');
  }
  // A token of a configured token's name would share its rate limit, logs and metrics, and of an
  // earlier one's (api-token-N, generated) take over what it owned.
  if (isConfiguredTokenName(name)) {
    throw new UsageError(
      `--name "${name}" is reserved for configured tokens (api-token-<12 hex digits>, and api-token-N and generated of earlier versions)`,
    );
  }
  const scopes = [...new Set((scope as string[] | undefined) ?? ['read', 'write'])];
  if (!scopes.every(isScope)) throw new UsageError(`--scope must be one of ${ALL_SCOPES.join(', ')}`);
  const secret = newTokenSecret();
  if (!(await store.tokens.create({ name, digest: tokenDigest(secret), scopes }))) {
    process.stderr.write(`A token named "${name}" already exists (revoked tokens keep their name).\n`);
    return 1;
  }
  process.stdout.write(`${secret}\n`);
  process.stderr.write(
    `Token "${name}" (${scopes.join(', ')}) created. It is shown only this once: store it now.\n`,
  );
  return 0;
}

async function listTokens(store: PlantStore): Promise<number> {
  for (const token of await store.tokens.list()) {
    process.stdout.write(
      `${JSON.stringify({
        name: token.name,
        scopes: token.scopes,
        createdAt: token.createdAt.toISOString(),
        revokedAt: token.revokedAt?.toISOString() ?? null,
      })}\n`,
    );
  }
  return 0;
}

async function revokeToken(store: PlantStore, args: string[]): Promise<number> {
  const names = named(parse(args, { name: { type: 'string', multiple: true } }).name, '--name');
  return eachIn(names, async (name) => {
    const revoked = await store.tokens.revoke(name);
    if (revoked === undefined) return { message: `No active token named "${name}".`, code: 1 };
    const { endpointsDisabled: n } = revoked;
    return {
      message: `Token "${name}" revoked, and its ${n} webhook endpoint${n === 1 ? '' : 's'} disabled; running instances stop accepting it, and end its event streams, within TOKEN_REFRESH_MS.`,
      code: 0,
    };
  });
}

/** The values of an option that names what to act on: at least one, each once, in the order given. */
function named(values: unknown, option: string): string[] {
  const given = (values as string[] | undefined) ?? [];
  if (given.length === 0) throw new UsageError(`${option} is required`);
  return [...new Set(given)];
}

/**
 * Acts on each value in turn, its message on stderr as it is done: 0 when every one succeeded,
 * else 1. One failing does not stop the others.
 */
async function eachIn(values: string[], act: (value: string) => Promise<Outcome>): Promise<number> {
  let code = 0;
  for (const value of values) {
    const outcome = await act(value);
    process.stderr.write(`${outcome.message}\n`);
    code = Math.max(code, outcome.code);
  }
  return code;
}

async function withStore(config: Config, run: (store: PlantStore) => Promise<number>): Promise<number> {
  const store = await openStore(config.store);
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

/**
 * The options of a command line, strictly: an unknown option, a missing value or a repeated option
 * that takes one value (node:util would keep only the last) is wrong usage.
 */
function parse(args: string[], options: NonNullable<ParseArgsConfig['options']>) {
  const { values, tokens } = usage(() => parseArgs({ args, options, strict: true, tokens: true }));
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option' || options[token.name]?.multiple) continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} takes one value: give it once`);
    seen.add(token.name);
  }
  return values as Record<string, string | string[] | boolean | undefined>;
}

/** What `parse` returns, node:util's refusal as wrong usage. */
function usage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
