// The guarantees issue 27 keeps on, added to the Koa floor (bench/koa-floor.mjs) when
// KOA_FLOOR_GUARANTEES=1: each done the direct way, with the library the api uses for it and none
// of the api's own code. A request id (the client's or a new UUID) and security headers, one pino
// access line (a turn's lines written together, as the api does), a request counter and a latency
// histogram, and an in-memory rate limit per token with its two headers. What the floor then costs
// is what those guarantees cost a Koa app that keeps them plainly, before any routing table,
// validation library or store of its own: the report sets the api beside it.
import { randomUUID } from 'node:crypto';
import { writeSync } from 'node:fs';
import pino from 'pino';
import { RateLimiterMemory } from 'rate-limiter-flexible';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LIMIT = 1_000_000_000;
const WINDOW_SECONDS = 60;

/** Lines written to stdout (a file in the bench) once per event-loop turn. */
function perTurn() {
  let lines = [];
  const flush = () => {
    const chunk = lines.join('');
    lines = [];
    writeSync(1, chunk);
  };
  return {
    write(line) {
      if (lines.length === 0) setImmediate(flush);
      lines.push(line);
    },
  };
}

/** The outermost middleware: request id, headers, then the access line and the two metrics. */
export function observe() {
  const log = pino(
    { base: { service: 'koa-floor' }, redact: ['authorization', 'token', 'secret'] },
    perTurn(),
  );
  const counts = new Map();
  const histograms = new Map();
  return async (ctx, next) => {
    const started = performance.now();
    const given = ctx.req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    ctx.res.setHeader('X-Request-Id', requestId);
    ctx.res.setHeader('X-Content-Type-Options', 'nosniff');
    ctx.res.setHeader('Cache-Control', 'no-store');
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const route = ctx.method === 'POST' ? '/plants' : '/plants/{id}';
      const { status } = ctx;
      const tokenName = ctx.state.tokenName ?? '-';
      const key = `${ctx.method} ${route} ${status} ${tokenName}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      const timeKey = `${ctx.method} ${route} ${status}`;
      let histogram = histograms.get(timeKey);
      if (histogram === undefined) {
        histogram = { buckets: new Array(BUCKETS.length + 1).fill(0), sum: 0 };
        histograms.set(timeKey, histogram);
      }
      let bucket = 0;
      while (bucket < BUCKETS.length && seconds > BUCKETS[bucket]) bucket++;
      histogram.buckets[bucket]++;
      histogram.sum += seconds;
      log.info(
        {
          reqId: requestId,
          method: ctx.method,
          route,
          path: ctx.path,
          status,
          ms: Math.round(seconds * 1e5) / 100,
          tokenName,
        },
        'request',
      );
    }
  };
}

/** After the token check: the token's rate limit, in memory, and its two headers. */
export function rateLimit(tokenName) {
  const limiter = new RateLimiterMemory({ points: LIMIT, duration: WINDOW_SECONDS });
  const policy = `"default";q=${LIMIT};w=${WINDOW_SECONDS}`;
  return async (ctx, next) => {
    ctx.state.tokenName = tokenName;
    const result = await limiter.consume(tokenName);
    ctx.res.setHeader('RateLimit-Policy', policy);
    ctx.res.setHeader(
      'RateLimit',
      `"default";r=${result.remainingPoints};t=${Math.ceil(result.msBeforeNext / 1000)}`,
    );
    return next();
  };
}
