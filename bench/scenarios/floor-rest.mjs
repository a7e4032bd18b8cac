// compare scenario `floor-rest`: POST /plants on bench/koa-floor.mjs (the baseline's create through
// Koa, nothing else), against `baseline`: what the framework alone leaves of the ceiling.

export default {
  name: 'floor-rest',
  kind: 'baseline-koa',
  load: 'rest',
  against: 'baseline',
  title: () => 'Koa floor: the baseline create through Koa (no fsync, log, metrics or rate limit)',
};
