import { execFileSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { join } from 'node:path';
import dnsPacket from 'dns-packet';

const REDIRECT_SOURCE = new URL('./dns-redirect.c', import.meta.url).pathname;

/** One question the fake name server was asked. */
export type DnsQuery = { name: string; type: string; at: number };

export type FakeDns = {
  /** Its address for WEBHOOK_DNS_SERVERS: `127.0.0.1:PORT`. */
  server: string;
  /** Every question asked, in order (each try of a resolver counts). */
  queries: DnsQuery[];
  /** From now on, `name` answers A with `address` (and AAAA with nothing). */
  answer(name: string, address: string): void;
  /** From now on, questions about `name` are never answered. */
  stall(name: string): void;
  /** The distinct names asked about, matching `pattern`. */
  namesAsked(pattern: RegExp): string[];
  close(): Promise<void>;
};

/**
 * A name server on loopback (UDP): names given to `answer` resolve, names under `.stall.test` (and
 * those given to `stall`) are never answered, as a third party's name server that never answers;
 * any other name is NXDOMAIN.
 */
export async function startFakeDns(): Promise<FakeDns> {
  const socket = createSocket('udp4');
  const answers = new Map<string, string>();
  const stalled = new Set<string>();
  const queries: DnsQuery[] = [];
  socket.on('message', (message, from) => {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    queries.push({ name, type: question.type, at: performance.now() });
    if (stalled.has(name) || name.endsWith('.stall.test')) return;
    const address = answers.get(name);
    const reply = dnsPacket.encode({
      id: query.id,
      type: 'response',
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (address === undefined ? 3 : 0),
      questions: [question],
      answers:
        address !== undefined && question.type === 'A'
          ? [{ type: 'A', name: question.name, ttl: 60, class: 'IN', data: address }]
          : [],
    });
    socket.send(reply, from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  return {
    server: `127.0.0.1:${port}`,
    queries,
    answer(name, address) {
      stalled.delete(name);
      answers.set(name, address);
    },
    stall(name) {
      stalled.add(name);
    },
    namesAsked: (pattern) => [
      ...new Set(queries.map((query) => query.name).filter((name) => pattern.test(name))),
    ],
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

/**
 * The environment that makes the system resolver of a process (glibc's getaddrinfo, behind
 * dns.lookup) ask `dns` too: dns-redirect.c, compiled into `dir` with the machine's C compiler.
 */
export function systemResolverEnv(dir: string, dns: FakeDns): Record<string, string> {
  const library = join(dir, 'dns-redirect.so');
  execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', library, REDIRECT_SOURCE, '-ldl']);
  return { LD_PRELOAD: library, PLANT_DNS_SERVER: dns.server };
}
