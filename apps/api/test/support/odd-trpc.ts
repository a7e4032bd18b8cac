import { listOperations } from '../../src/operations/registry.ts';

/**
 * `count` distinct /trpc batch paths naming odd combinations of procedures, as issue 22's row 5
 * sent them: 2 to 5 calls each, of known procedures (in any order, repeated) mixed with unknown
 * and prototype names. The same paths on every run.
 */
export function oddTrpcPaths(count: number): string[] {
  const names = [...listOperations().map(({ path }) => path), 'plants', 'nope', 'valueOf', '__proto__'];
  let seed = 22;
  // A 32-bit linear congruential generator (exact in integer arithmetic), its high bits used:
  // repeatable without a dependency.
  const next = () => {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    return seed >>> 16;
  };
  const paths = new Set<string>();
  while (paths.size < count) {
    const calls = Array.from({ length: 2 + (next() % 4) }, () => names[next() % names.length]!);
    paths.add(`/trpc/${calls.join(',')}?batch=1`);
  }
  return [...paths];
}

/** The lines of a /metrics text that are samples (not `# HELP`/`# TYPE` comments). */
export function sampleLines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
}
