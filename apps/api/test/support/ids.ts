/**
 * Ids at the edges of what the api must keep exact, ascending: int64's ends, and both sides of
 * 2^53 (2^53 + 1 is the first integer a JavaScript number cannot hold).
 */
export const EDGE_IDS: readonly bigint[] = [-(2n ** 63n), 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n - 1n];
