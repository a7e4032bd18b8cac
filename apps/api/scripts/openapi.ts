// `pnpm openapi` (at the root): writes apps/api/openapi.json from the source.
// `pnpm --filter @plant-store/api openapi:check`: compares it with the last released document.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { COMMITTED_PATH, checkBreakingChanges, formatChanges, generatedDocument, lastReleased } from './contract.ts';

if (process.argv[2] === 'check') {
  const released = lastReleased();
  const result = await checkBreakingChanges(released.path, COMMITTED_PATH);
  process.stdout.write(formatChanges(result));
  if (result.problems.length > 0) {
    process.stderr.write(`${result.problems.join('\n')}\n`);
    process.exitCode = 1;
  }
} else {
  writeFileSync(COMMITTED_PATH, generatedDocument());
  process.stdout.write(`wrote ${relative(process.cwd(), COMMITTED_PATH)}\n`);
}
