// Summarises a V8 CPU profile (node --cpu-prof) of the bundled api: self time by function and by
// package. The api is one minified bundle (apps/api/dist), so each function's position is mapped
// back through the bundle's source map to its original file and line.

import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DIGIT = Object.fromEntries([...BASE64].map((c, i) => [c, i]));

/** A source map's mappings, decoded: per generated line, segments [column, source, line]. */
function decodeMappings(mappings) {
  const lines = [];
  let source = 0;
  let sourceLine = 0;
  let _sourceColumn = 0;
  for (const lineText of mappings.split(';')) {
    const segments = [];
    let column = 0;
    for (const segment of lineText.split(',')) {
      if (segment === '') continue;
      const values = [];
      let value = 0;
      let shift = 0;
      for (const char of segment) {
        const digit = DIGIT[char];
        value += (digit & 31) << shift;
        if (digit & 32) shift += 5;
        else {
          values.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      column += values[0];
      if (values.length >= 4) {
        source += values[1];
        sourceLine += values[2];
        _sourceColumn += values[3];
        segments.push([column, source, sourceLine]);
      }
    }
    lines.push(segments);
  }
  return lines;
}

const maps = new Map();
function sourceMapOf(url) {
  if (!maps.has(url)) {
    let map = null;
    try {
      const file = `${fileURLToPath(url)}.map`;
      if (existsSync(file)) {
        const raw = JSON.parse(readFileSync(file, 'utf8'));
        map = {
          sources: raw.sources,
          contents: raw.sourcesContent ?? [],
          lines: decodeMappings(raw.mappings),
        };
      }
    } catch {}
    maps.set(url, map);
  }
  return maps.get(url);
}

/** The original file, line and line text of a position in a bundled file. */
function originalPosition(url, line, column) {
  const map = url.startsWith('file:') ? sourceMapOf(url) : null;
  const segments = map?.lines[line];
  if (!segments?.length) return undefined;
  let found = segments[0];
  for (const segment of segments) {
    if (segment[0] > column) break;
    found = segment;
  }
  const [, source, sourceLine] = found;
  const text = map.contents[source]?.split('\n')[sourceLine]?.trim() ?? '';
  return { file: map.sources[source], line: sourceLine + 1, text };
}

/** What a file belongs to: its npm package, the api's own source, or a Node.js internal area. */
function packageOf(file) {
  const at = file.lastIndexOf('node_modules/');
  if (at !== -1) {
    const [first, second] = file.slice(at + 'node_modules/'.length).split('/');
    return first.startsWith('@') ? `${first}/${second}` : first;
  }
  if (file.startsWith('node:')) {
    const [area] = file
      .slice('node:'.length)
      .replace(/^internal\//, '')
      .split('/');
    return `node:${area.replace(/\.js$/, '')}`;
  }
  const src = file.indexOf('src/');
  if (src !== -1)
    return file
      .slice(src)
      .replace(/^src\//, 'api:')
      .replace(/\/[^/]*$/, '');
  return file;
}

/** Self time of a profile's functions and packages, the largest first, as shares of the busy time. */
export function summariseProfile(path, top = 15) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const totalHits = profile.nodes.reduce((n, node) => n + (node.hitCount ?? 0), 0);
  const micros = (profile.endTime - profile.startTime) / Math.max(1, totalHits);
  const byFunction = new Map();
  const byPackage = new Map();
  const add = (map, key, hits, extra) => {
    const entry = map.get(key) ?? { hits: 0, ...extra };
    entry.hits += hits;
    map.set(key, entry);
  };
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0) continue;
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    let where;
    let pkg;
    let name = functionName || '(anonymous)';
    if (url === '') {
      // (program), (garbage collector), (idle), or native code without a script.
      pkg = functionName.startsWith('(') ? functionName : 'native';
      where = '';
    } else {
      const original = originalPosition(url, lineNumber, columnNumber);
      const file = original?.file ?? url.replace(/^file:\/\/.*\/(apps|bench)\//, '$1/');
      pkg = packageOf(file);
      where = original
        ? `${file.replace(/^.*node_modules\//, '')}:${original.line}`
        : `${file}:${lineNumber + 1}`;
      // A helper a dependency's build injected (an object-spread polyfill, say) maps to whatever
      // line is nearest, often a lone brace: keep its bundled name beside that line.
      if (original?.text)
        name = original.text.length < 8 ? `${name} ↦ ${original.text}` : original.text.slice(0, 70);
    }
    add(byFunction, `${pkg} ${where} ${name}`, hits, { name, where, pkg });
    add(byPackage, pkg, hits, { pkg });
  }
  // Shares of the time the process was busy: waiting ("(idle)") is left out.
  const idle = byPackage.get('(idle)')?.hits ?? 0;
  byPackage.delete('(idle)');
  for (const [key, entry] of byFunction) if (entry.pkg === '(idle)') byFunction.delete(key);
  const busy = Math.max(1, totalHits - idle);
  const share = (hits) => Math.round((hits / busy) * 1000) / 10;
  const sorted = (map) => [...map.values()].sort((a, b) => b.hits - a.hits);
  return {
    seconds: Math.round((profile.endTime - profile.startTime) / 1e4) / 100,
    sampleMicros: Math.round(micros),
    busyPct: Math.round((busy / Math.max(1, totalHits)) * 1000) / 10,
    functions: sorted(byFunction)
      .slice(0, top)
      .map((f) => ({ selfPct: share(f.hits), package: f.pkg, where: f.where, code: f.name })),
    packages: sorted(byPackage)
      .slice(0, top)
      .map((p) => ({ selfPct: share(p.hits), package: p.pkg })),
  };
}
