// The chart of `compare` (bench/results/latest.svg): each api scenario's throughput relative to the
// scenario it is against (= 1), with its target marked. Hand-written SVG, so that it diffs as text.
import { writeFileSync } from 'node:fs';
import { SCENARIOS } from './scenarios.mjs';
import { fmtInt } from './stats.mjs';

const xml = (text) => String(text).replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

export function writeChart(report, path) {
  const summary = report.compare.summary;
  const rows = Object.entries(summary).filter(
    ([name, s]) => s.against !== name && s.runs > 0 && summary[s.against]?.runs > 0,
  );
  const [left, barWidth, rowHeight, top] = [330, 380, 44, 56];
  const width = left + barWidth + 140;
  const height = top + rows.length * rowHeight + 30;
  // 0–2.1×: a larger ratio (a tRPC batch counts 10 creates a request) is drawn to the edge.
  const x = (ratio) => left + (Math.min(ratio, 2.1) / 2.1) * barWidth;
  const m = report.machine;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="12" y="22" font-size="15" font-weight="600">Plant store: the api beside its baselines (throughput, baseline = 1)</text>`,
    `<text x="12" y="40" fill="#555">${xml(`${m.date.slice(0, 16).replace('T', ' ')} UTC · ${m.cpuModel} × ${m.cores} · Node ${m.node} · median of ${report.settings.runs} runs${m.loadAverageAtStart[0] > 0.5 ? ' · measured under contention' : ''}`)}</text>`,
  ];
  for (const tick of [0, 0.5, 1, 1.5, 2])
    out.push(
      `<line x1="${x(tick)}" y1="${top - 6}" x2="${x(tick)}" y2="${height - 24}" stroke="${tick === 1 ? '#999' : '#e5e5e5'}"/>`,
      `<text x="${x(tick)}" y="${height - 10}" text-anchor="middle" fill="#555">${tick}×</text>`,
    );
  rows.forEach(([name, s], i) => {
    const y = top + i * rowHeight;
    const ratio = s.vsBaseline ?? 0;
    const goal = SCENARIOS[name].target;
    const figure = `${fmtInt(s.donePerSec)}/s · ${ratio.toFixed(2)}×`;
    out.push(
      `<text x="${left - 8}" y="${y + 14}" text-anchor="end" font-weight="600">${xml(SCENARIOS[name].title)}</text>`,
      `<text x="${left - 8}" y="${y + 30}" text-anchor="end" fill="#666">${xml(`vs ${s.against}, ${fmtInt(summary[s.against].donePerSec)}/s`)}</text>`,
      `<rect x="${left}" y="${y + 3}" width="${x(ratio) - left}" height="16" fill="${ratio < (goal ?? 0) ? '#d9822b' : '#2f6fb0'}"/>`,
      `<text x="${Math.max(x(ratio), goal ? x(goal) : 0) + 5}" y="${y + 15}">${xml(figure)}</text>`,
    );
    if (goal)
      out.push(
        `<line x1="${x(goal)}" y1="${y}" x2="${x(goal)}" y2="${y + 24}" stroke="#111" stroke-width="2" stroke-dasharray="3 2"/>`,
        `<text x="${x(goal) + 5}" y="${y + 32}" fill="#555">${xml(`target ${goal}×`)}</text>`,
      );
  });
  writeFileSync(path, `${out.join('\n')}\n</svg>\n`);
}
