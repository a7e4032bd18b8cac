export type { AppRouter } from './trpc/router.ts';
