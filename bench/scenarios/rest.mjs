// compare scenario `rest`: POST /plants on the api, SQLite store.

export default {
  name: 'rest',
  kind: 'api',
  load: 'rest',
  title: () => 'api REST POST /plants (SQLite)',
};
