// compare scenario `trpc-batch`: BENCH_BATCH creates per request, as httpBatchLink sends them.

export default {
  name: 'trpc-batch',
  kind: 'api',
  load: 'trpc-batch',
  title: (settings) => `api tRPC plants.create, batched (${settings.batch} per request)`,
};
