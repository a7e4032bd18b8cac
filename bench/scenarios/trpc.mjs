// compare scenario `trpc`: POST /trpc/plants.create on the api, one call per request.

export default {
  name: 'trpc',
  kind: 'api',
  load: 'trpc',
  title: () => 'api tRPC plants.create, 1 call per request',
};
