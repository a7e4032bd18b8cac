// Where a callgrind dump's instructions went, by function, JavaScript included: callgrind sees V8's
// machine code only as addresses; the map V8 wrote beside the dump (bench/instructions.mjs with
// BENCH_INSTRUCTIONS_DUMP) names them (`JS:*name file:line:column`, `*` for optimized code, inlined
// callees counted in their caller). Costs are per measured request.
//
//   node bench/annotate.mjs <dump> [--top N] [--requests N] [--callers <part of a function's name>]
//
// Without --callers: the functions that spent the most themselves (exclusive). With it: which
// functions called the one named, and what those calls cost (inclusive), e.g.
// `--callers KeyedLoadIC_Megamorphic` for the code whose property loads missed V8's inline caches.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '40' },
    requests: { type: 'string' },
    callers: { type: 'string' },
  },
});
const [dump] = positionals;
if (!dump)
  throw new Error('usage: node bench/annotate.mjs <dump> [--top N] [--requests N] [--callers <name>]');
const text = readFileSync(dump, 'utf8');
// The dump's command line does not say how many requests it measured: instructions.mjs prints it.
const requests = Number(values.requests ?? 20_000);

const code = readFileSync(`${dump}.map`, 'utf8')
  .split('\n')
  .map((line) => /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line))
  .filter(Boolean)
  .map(([, start, size, name]) => ({
    start: Number.parseInt(start, 16),
    end: Number.parseInt(start, 16) + Number.parseInt(size, 16),
    name,
  }))
  .sort((a, b) => a.start - b.start);

/** A function's name: callgrind's, or for an address the map's entry that holds it. */
function named(name) {
  const address = /^0x([0-9a-f]+)/.exec(name.replace(/^\?\?\?:/, ''));
  if (!address) return name;
  const at = Number.parseInt(address[1], 16);
  let low = 0;
  let high = code.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (code[mid].end <= at) low = mid + 1;
    else if (code[mid].start > at) high = mid - 1;
    else return code[mid].name;
  }
  return name;
}

const costs = new Map();
const add = (name, cost) => costs.set(named(name), (costs.get(named(name)) ?? 0) + cost);

if (values.callers === undefined) {
  const annotated = spawnSync('callgrind_annotate', ['--threshold=100', dump], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  for (const line of annotated.stdout.split('\n')) {
    const match = /^\s*([\d,]+)\s+\([^)]*\)\s+(.*)$/.exec(line);
    if (match && !match[2].includes('PROGRAM TOTALS')) add(match[2], Number(match[1].replaceAll(',', '')));
  }
} else {
  // The dump's own records: `fn=` names the caller, `cfn=` the callee, and the line after
  // `calls=` the call's inclusive cost. Names are given once, then referred to by `(id)`.
  const names = new Map();
  const resolve = (ref) => {
    const [, id, name] = /^\((\d+)\)(?: (.*))?$/.exec(ref) ?? [undefined, undefined, ref];
    if (id === undefined) return name;
    if (name !== undefined) names.set(id, name);
    return names.get(id);
  };
  const lines = text.split('\n');
  let caller;
  let callee;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('fn=')) caller = resolve(line.slice(3));
    else if (line.startsWith('cfn=')) callee = resolve(line.slice(4));
    else if (line.startsWith('calls=')) {
      const cost = Number(lines[++i].split(' ')[1] ?? 0);
      if (callee?.includes(values.callers)) add(caller, cost);
    }
  }
}

const rows = [...costs].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
for (const [name, cost] of rows)
  console.log(`${String(Math.round(cost / requests)).padStart(8)}  ${name.slice(0, 160)}`);
