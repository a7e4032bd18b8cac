// Preloaded by gc-soak.mjs (`node --expose-gc --import`): a full garbage collection every 100 ms.
if (typeof globalThis.gc !== 'function') throw new Error('force-gc.mjs needs node --expose-gc');
setInterval(globalThis.gc, 100).unref();
