// compare scenario `baseline`: POST /plants on bench/baseline.mjs, the ceiling every ratio is
// against.

export default {
  name: 'baseline',
  kind: 'baseline',
  load: 'rest',
  title: () => 'baseline: node:http + better-sqlite3 (synchronous=NORMAL)',
};
