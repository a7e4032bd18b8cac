export * from './error.ts';
export * from './plant.ts';
export * from './json.ts';
