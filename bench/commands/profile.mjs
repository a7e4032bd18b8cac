// `profile`: one run of each api scenario of BENCH_SCENARIOS with the api under `node --cpu-prof`:
// self time by package and by function, as shares of the time the process was busy, the minified
// bundle's positions mapped back to their sources through its source map. The profiler slows the
// api, so these runs' throughput is compared with nothing.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { originalPositionFor, TraceMap } from '@jridgewell/trace-mapping';
import { runScenario } from '../lib/measure.mjs';
import { SCENARIOS } from '../lib/scenarios.mjs';
import { progress, warn } from '../lib/session.mjs';
import { fmtInt, table } from '../lib/stats.mjs';
import { makeTempDir, removeTempDir } from '../lib/system.mjs';

const TOP = 12;

/** Where a source file belongs: its npm package, a folder of the api, or an area of Node itself. */
function packageOf(file) {
  const inModules = /.*node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (inModules) return inModules[1];
  if (file.startsWith('node:'))
    return `node:${file
      .slice(5)
      .replace(/^internal\//, '')
      .split('/')[0]
      .replace(/\.js$/, '')}`;
  return file.replace(/^.*?src\//, 'api:').replace(/\/[^/]*$/, '');
}

/** Self time of a profile's functions and packages, the largest first, in % of the busy time. */
export function summarise(path) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const maps = new Map();
  const mapOf = (url) => {
    if (!maps.has(url)) {
      try {
        maps.set(url, new TraceMap(readFileSync(`${fileURLToPath(url)}.map`, 'utf8'), url));
      } catch {
        maps.set(url, null);
      }
    }
    return maps.get(url);
  };
  const functions = new Map();
  const packages = new Map();
  const add = (map, key, hits) => map.set(key, (map.get(key) ?? 0) + hits);
  let busy = 0;
  for (const { hitCount: hits = 0, callFrame: frame } of profile.nodes) {
    if (hits === 0 || frame.functionName === '(idle)') continue;
    busy += hits;
    let name = frame.functionName || '(anonymous)';
    let pkg = name.startsWith('(') ? name : 'native';
    if (frame.url) {
      const map = frame.url.startsWith('file:') && mapOf(frame.url);
      const at = map && originalPositionFor(map, { line: frame.lineNumber + 1, column: frame.columnNumber });
      const file = at?.source ?? frame.url;
      pkg = packageOf(file);
      name = `${at?.name ?? name} (${file.replace(/^.*node_modules\//, '').replace(/^.*?(src\/)/, '$1')}:${at?.line ?? frame.lineNumber + 1})`;
    }
    add(functions, `${pkg} ${name}`, hits);
    add(packages, pkg, hits);
  }
  const top = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([key, hits]) => [key, Math.round((hits / busy) * 1000) / 10]);
  return { packages: top(packages), functions: top(functions) };
}

async function run(settings) {
  const results = {};
  for (const name of settings.scenarios.filter((n) => !SCENARIOS[n].server)) {
    const profileDir = makeTempDir(`profile-${name}`, settings.tmpBase);
    try {
      const result = await runScenario({ ...settings, profileDir }, name);
      const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
      if (!file) throw new Error('the api wrote no profile');
      results[name] = { reqPerSec: result.reqPerSec, ...summarise(join(profileDir, file)) };
      progress(
        `[profile] ${name}: ${results[name].packages
          .slice(0, 5)
          .map(([p, pct]) => `${p} ${pct}%`)
          .join(', ')}`,
      );
    } catch (error) {
      warn(`profile ${name}: ${error.message}`);
    } finally {
      removeTempDir(profileDir);
    }
  }
  return results;
}

const render = (results) => [
  '## Where the time goes: the api under `node --cpu-prof`',
  '',
  'Self time (in the function itself, not what it calls) as a share of the time the api was busy, start-up and warm-up included. "(program)" is native code outside JavaScript (the HTTP parser, system calls, SQLite), "native" V8\'s built-ins.',
  '',
  ...Object.entries(results).flatMap(([name, r]) => [
    `### ${SCENARIOS[name].title} (${fmtInt(r.reqPerSec)} req/s under the profiler)`,
    '',
    `By package: ${r.packages.map(([p, pct]) => `${p} ${pct}%`).join(' · ')}`,
    '',
    table(
      ['self %', 'function'],
      r.functions.map(([f, pct]) => [pct, `\`${f}\``]),
    ),
  ]),
];

export default { name: 'profile', run, render, targets: () => [] };
