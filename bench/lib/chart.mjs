// The side-by-side chart of `pnpm bench` (bench/results/latest.svg, shown in the README): for each
// api scenario, its throughput beside its baseline's, drawn relative to the baseline (= 1), with
// the target ratio marked. Hand-written SVG: no dependency, and the file diffs as text.

import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fmtInt } from './format.mjs';
import { RATIO_TARGETS } from './targets.mjs';

const xml = (text) =>
  String(text).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

/** Writes the chart of `report.compare` to `path`; returns the file's name (for the Markdown). */
export function writeChart(report, path) {
  const summary = report.compare.summary;
  const rows = Object.entries(summary)
    .filter(([name, s]) => s.against !== name && s.runs > 0 && summary[s.against]?.runs > 0)
    .map(([name, s]) => ({ name, s, base: summary[s.against], target: RATIO_TARGETS[name] }));
  const left = 220;
  const barWidth = 380;
  const width = left + barWidth + 130;
  const rowHeight = 50;
  const top = 64;
  const height = top + rows.length * rowHeight + 34;
  // 0–2×: a ratio beyond (tRPC batched counts 10 creates a request) is drawn to the edge.
  const scaleMax = 2.1;
  const x = (ratio) => left + (Math.min(ratio, scaleMax) / scaleMax) * barWidth;
  const m = report.machine;
  const load = m.loadAverageAtStart?.[0];
  const contended = typeof load === 'number' && load > 0.5;
  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="12" y="22" font-size="15" font-weight="600">Plant store: the api beside its baselines (throughput, baseline = 1)</text>`,
    `<text x="12" y="40" fill="#555">${xml(`${m.date?.slice(0, 16).replace('T', ' ')} UTC · ${m.cpuModel} × ${m.cores} · Node ${m.node} · median of ${report.settings.runs} interleaved runs · ${report.settings.connections} connections`)}</text>`,
  );
  if (contended)
    out.push(
      `<text x="12" y="56" fill="#b00020" font-weight="600">${xml(`Measured under contention (load average ${load} at start): not the official figures`)}</text>`,
    );
  for (const tick of [0, 0.5, 1, 1.5, 2].filter((t) => t <= scaleMax)) {
    out.push(
      `<line x1="${x(tick)}" y1="${top - 6}" x2="${x(tick)}" y2="${height - 28}" stroke="${tick === 1 ? '#999' : '#e5e5e5'}"/>`,
      `<text x="${x(tick)}" y="${height - 14}" text-anchor="middle" fill="#555">${tick}×</text>`,
    );
  }
  rows.forEach(({ name, s, base, target }, i) => {
    const y = top + i * rowHeight;
    const ratio = s.vsBaseline ?? 0;
    const pass = target === undefined ? undefined : ratio >= target;
    const color = pass === false ? '#d9822b' : '#2f6fb0';
    const unit = s.reads ? 'reads/s' : 'creates/s';
    out.push(
      `<text x="${left - 8}" y="${y + 14}" text-anchor="end" font-weight="600">${xml(LABELS[name] ?? name)}</text>`,
      `<text x="${left - 8}" y="${y + 32}" text-anchor="end" fill="#666">${xml(`vs ${LABELS[s.against] ?? s.against}`)}</text>`,
      `<rect x="${left}" y="${y + 3}" width="${x(ratio) - left}" height="16" fill="${color}"/>`,
      x(ratio) > left + barWidth * 0.6
        ? `<text x="${x(ratio) - 5}" y="${y + 15}" text-anchor="end" fill="#fff">${xml(`${fmtInt(s.createsPerSec)} ${unit} · ${ratio.toFixed(2)}×`)}</text>`
        : `<text x="${Math.max(x(ratio), target === undefined ? 0 : x(target)) + 5}" y="${y + 15}">${xml(`${fmtInt(s.createsPerSec)} ${unit} · ${ratio.toFixed(2)}×`)}</text>`,
      `<rect x="${left}" y="${y + 22}" width="${x(1) - left}" height="12" fill="#bbb"/>`,
      `<text x="${x(1) + 5}" y="${y + 32}" fill="#555">${xml(`${fmtInt(base.createsPerSec)} ${unit}`)}</text>`,
    );
    if (target !== undefined) {
      out.push(
        `<line x1="${x(target)}" y1="${y}" x2="${x(target)}" y2="${y + 38}" stroke="#111" stroke-width="2" stroke-dasharray="3 2"/>`,
        `<text x="${width - 8}" y="${y + 32}" text-anchor="end" fill="${pass ? '#1b7f3b' : '#b00020'}">${xml(`target ${target}× ${pass ? '✓' : '✗'}`)}</text>`,
      );
    }
  });
  out.push('</svg>', '');
  writeFileSync(path, out.join('\n'));
  return basename(path);
}

/** Short names of the scenarios for the chart (the report's tables have the full titles). */
const LABELS = {
  baseline: 'bare node:http + SQLite create',
  'floor-rest': 'the same create through Koa',
  'floor-rest-kept': 'Koa create, log, metrics, limit',
  rest: 'REST create (SQLite, fsync)',
  trpc: 'tRPC create, 1 per request',
  'trpc-batch': 'tRPC create, 10 per request',
  webhook: 'REST create + 1 webhook',
  'rest-unsampled': 'REST create, tracing unsampled',
  'rest-traced': 'REST create, every span exported',
  'baseline-get': 'bare node:http + SQLite get',
  'floor-get': 'the same get through Koa',
  'floor-get-kept': 'Koa get, log, metrics, limit',
  get: 'REST GET /plants/{id}',
  'get-unsampled': 'GET by id, tracing unsampled',
  'get-traced': 'GET by id, every span exported',
  'baseline-list': 'bare node:http + SQLite list',
  list: 'REST GET /plants?limit=100',
  'baseline-pg': 'hand-written node:http + pg',
  postgres: 'REST create (PostgreSQL)',
};
