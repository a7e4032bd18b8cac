import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const SOURCE = new URL('./fault-injection.c', import.meta.url).pathname;

/** The faults fault-injection.c can inject into the write-ahead log, and what each one fails. */
export type DiskFault = 'fdatasync' | 'wal-write';

/**
 * Compiles fault-injection.c with the machine's C compiler into `dir`, and returns the environment
 * that loads it into a process: `fault` is injected from the moment the file `marker` exists.
 */
export function diskFaultEnv(dir: string, fault: DiskFault, marker: string): Record<string, string> {
  const library = join(dir, 'fault-injection.so');
  execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', library, SOURCE, '-ldl']);
  return { LD_PRELOAD: library, PLANT_FAULT: fault, PLANT_FAULT_MARKER: marker };
}
