import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { createTokenVerifier, type IssuedToken, tokenDigest } from './tokens.ts';
import { startTokenRefresh } from './token-refresh.ts';

const SECRET = 'pst_issued-secret-0123456789';
const TOKENS: IssuedToken[] = [{ name: 'reporting', digest: tokenDigest(SECRET), scopes: ['read'] }];

function capture() {
  const lines: { msg: string }[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, messages: () => lines.map((line) => line.msg) };
}

describe('startTokenRefresh', () => {
  it('runs one reload at a time: a slow one is never started twice or overlapped', async () => {
    const verifier = createTokenVerifier([]);
    const { log } = capture();
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const refresh = await startTokenRefresh({
      verifier,
      intervalMs: 5,
      log,
      // Each reload takes 60 ms, twelve times the interval.
      load: async () => {
        running++;
        most = Math.max(most, running);
        started.push(performance.now());
        await sleep(60);
        running--;
        return TOKENS;
      },
    });
    await sleep(400);
    refresh.stop();
    expect(most).toBe(1);
    expect(started.length).toBeGreaterThanOrEqual(2);
    // Overlapping reloads would start every 5 ms; timers may fire a millisecond early.
    for (let i = 1; i < started.length; i++) {
      expect(started[i]! - started[i - 1]!).toBeGreaterThanOrEqual(55);
    }
  });

  it('refuses issued tokens after 3 failed reloads, logs that once, and accepts them again after one succeeds', async () => {
    const intervalMs = 40;
    const verifier = createTokenVerifier([], { issuedMaxAgeMs: 3 * intervalMs });
    const { log, messages } = capture();
    let failing = false;
    const refresh = await startTokenRefresh({
      verifier,
      intervalMs,
      log,
      load: async () => {
        if (failing) throw new Error('store unavailable');
        return TOKENS;
      },
    });
    try {
      expect(verifier.verify(`Bearer ${SECRET}`).ok).toBe(true);
      failing = true;
      await sleep(10 * intervalMs);
      expect(verifier.verify(`Bearer ${SECRET}`)).toEqual({ ok: false, reason: 'invalid' });
      const refused = messages().filter((msg) => msg.startsWith('tokens could not be reloaded'));
      expect(refused).toHaveLength(1);
      expect(messages().filter((msg) => msg === 'could not reload tokens').length).toBeGreaterThanOrEqual(5);
      failing = false;
      await sleep(3 * intervalMs);
      expect(verifier.verify(`Bearer ${SECRET}`).ok).toBe(true);
      expect(
        messages().filter((msg) => msg === 'tokens reloaded: issued tokens are accepted again'),
      ).toHaveLength(1);
    } finally {
      refresh.stop();
    }
  });

  it('calls onReload after each reload that succeeded, with the verifier already holding its tokens', async () => {
    const verifier = createTokenVerifier([]);
    const { log } = capture();
    let failing = false;
    let loads = 0;
    const seen: string[] = [];
    const refresh = await startTokenRefresh({
      verifier,
      intervalMs: 20,
      log,
      load: async () => {
        loads++;
        if (failing) throw new Error('store unavailable');
        return loads === 1 ? TOKENS : [];
      },
      onReload: () => seen.push(verifier.standing('reporting').state),
    });
    try {
      await vi.waitFor(() => expect(seen).toContain('inactive'));
      failing = true;
      const before = seen.length;
      await sleep(200);
      expect(seen.length).toBe(before);
      expect(loads).toBeGreaterThan(2);
    } finally {
      refresh.stop();
    }
    // The first load (at start) is not a reload: there is nothing open yet to retain.
    expect(seen.every((state) => state === 'inactive')).toBe(true);
  });

  it('fails start-up when the first load fails', async () => {
    const { log } = capture();
    await expect(
      startTokenRefresh({
        verifier: createTokenVerifier([]),
        intervalMs: 10,
        log,
        load: () => Promise.reject(new Error('no store')),
      }),
    ).rejects.toThrow('no store');
  });
});
