// compare scenario `floor-rest-kept`: `floor-rest` keeping the guarantees the api keeps on every
// request (KOA_FLOOR_GUARANTEES=1: request id, access log line, metrics, rate limit), against
// `floor-rest`: what those guarantees alone cost a create through Koa, done the direct way. Still
// no fsync, event row or idempotency: those are the api's own.

export default {
  name: 'floor-rest-kept',
  kind: 'baseline-koa',
  load: 'rest',
  against: 'floor-rest',
  title: () => 'Koa floor create with a request id, access log, metrics and rate limit (no fsync)',
  open: () => ({ env: { KOA_FLOOR_GUARANTEES: '1' } }),
};
