export * from './error.ts';
export * from './plant.ts';
export * from './json.ts';
export * from './integer.ts';
export * from './event.ts';
export * from './webhook-endpoint.ts';
export * from './webhook-body.ts';
