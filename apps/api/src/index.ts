export type { AppRouter } from './router.ts';
