// The Markdown report of `pnpm bench` (bench/results/latest.md), from the JSON report.

import {
  fmtCount as count,
  fmtInt as int,
  fmtMs as ms,
  fmtNum as num,
  fmtPct as pct,
  fmtRatio as x,
} from './format.mjs';

function table(head, rows) {
  const line = (cells) => `| ${cells.map((cell) => String(cell).replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** A row of a scenario whose every run failed: its label, "failed", blanks, the first error. */
function failedRow(label, width, error) {
  return [label, 'failed', ...Array(width - 3).fill(''), String(error ?? '').slice(0, 120)];
}

/** The columns both run tables (compare, growth) share, and their cells. */
const HEALTH_HEAD = ['non-2xx', 'errors', 'peak RSS MB', 'server CPU'];
const health = (r) => [num(r.non2xx), num(r.errors), num(r.peakRssMb), pct(r.serverCpu)];

export function renderMarkdown(report) {
  const { machine: m, settings: s } = report;
  const out = [];
  out.push('# Plant store benchmark', '');
  out.push(
    `${m.date} · ${m.cpuModel}, ${m.cores} cores, ${m.memoryGb} GB · ${m.os} · Node ${m.node}` +
      `${m.commit ? ` · commit ${m.commit}` : ''}`,
  );
  out.push('');
  out.push(
    `Pinning: ${s.pinning.off ? `off (${s.pinning.off})` : `server on CPU ${s.pinning.serverCpu}, load generator (autocannon) on CPU ${s.pinning.loadCpu} (taskset)`}` +
      ` · data in ${m.dataDir} (${m.dataDirFs ?? 'unknown fs'}) · api: NODE_ENV=production, LOG_LEVEL=info, log ${s.apiLog === 'file' ? 'to a file' : 'discarded'}` +
      ` · load average ${m.loadAverageAtStart.join(' ')} at start, ${m.loadAverageAtEnd.join(' ')} at end · ${m.benchSeconds} s in all`,
  );
  out.push('');

  if (report.targets.length > 0) {
    out.push('## Targets', '');
    out.push(
      table(
        ['target', 'figure', 'result'],
        report.targets.map((t) => [t.target, t.figure, t.result]),
      ),
    );
    out.push('');
  }

  const c = report.compare?.summary;
  if (c) {
    out.push(
      `## Side by side: median of ${s.runs} interleaved run(s) each, ${s.connections} connections, ${s.durationSeconds} s measured after ${s.warmupSeconds} s warm-up, ids ${s.ids}`,
      '',
    );
    const rows = Object.entries(c).map(([name, r]) =>
      r.runs === 0
        ? failedRow(r.title ?? name, 13, r.error)
        : [
            r.title ?? name,
            int(r.reqPerSec),
            int(r.createsPerSec),
            x(r.vsBaseline),
            ms(r.p50),
            ms(r.p99),
            x(r.p99VsBaseline),
            ...health(r),
            pct(r.loadCpu),
            `${r.perRun.map(int).join(' · ')}${r.failed ? ` (${r.failed} failed)` : ''}`,
          ],
    );
    out.push(
      table(
        [
          'scenario',
          'req/s',
          'creates/s',
          'creates/s × baseline',
          'p50 ms',
          'p99 ms',
          'p99 × baseline',
          ...HEALTH_HEAD,
          'load CPU',
          'creates/s per run',
        ],
        rows,
      ),
    );
    out.push('');
  }

  const g = report.growth;
  if (g) {
    out.push(
      `## Growth: REST creates with plants already stored (SQLite), median of ${s.runs} interleaved run(s), ids ${g.idMode}`,
      '',
    );
    const first = count(g.sizes[0]);
    const rows = g.sizes.map((size) => {
      const r = g.summary[size];
      return r.runs === 0
        ? failedRow(count(size), 10, r.error)
        : [
            count(size),
            int(r.createsPerSec),
            x(r.vsFirst),
            ms(r.p50),
            ms(r.p99),
            ...health(r),
            r.perRun.map(int).join(' · '),
          ];
    });
    out.push(
      table(
        ['stored', 'creates/s', `× at ${first}`, 'p50 ms', 'p99 ms', ...HEALTH_HEAD, 'creates/s per run'],
        rows,
      ),
    );
    out.push('');
  }

  const k = report.soak;
  if (k) {
    out.push(`## Soak: ${k.seconds} s of REST creates, server RSS sampled every second`, '');
    if (k.error) out.push(`Failed: ${k.error}`);
    else {
      out.push(
        table(
          [
            'creates/s',
            'last third ÷ first third',
            'p50 ms',
            'p99 ms',
            'non-2xx',
            'errors',
            'RSS min MB',
            'RSS max MB',
            'peak RSS (VmHWM) MB',
            `RSS trend ${k.trendWindow}`,
          ],
          [
            [
              int(k.createsPerSec),
              x(k.throughputLastVsFirstThird),
              ms(k.p50),
              ms(k.p99),
              num(k.non2xx),
              num(k.errors),
              num(k.rssMinMb),
              num(k.rssMaxMb),
              num(k.peakRssMb),
              k.trendMbPerMin === null
                ? 'n/a'
                : `${k.trendMbPerMin >= 0 ? '+' : ''}${k.trendMbPerMin} MB/min`,
            ],
          ],
        ),
      );
      out.push('', `RSS (MB) each second: ${k.rssSamples.map((p) => Math.round(p.mb)).join(' ')}`);
    }
    out.push('');
  }

  const cs = report.cold;
  if (cs) {
    out.push(
      `## Cold start: spawn to first 200 on POST /plants (fresh data directory), median of ${cs.runs}`,
      '',
    );
    out.push(
      table(
        ['server', 'median ms', 'runs ms'],
        [
          ['api', num(cs.api.medianMs), cs.api.runsMs.join(' · ')],
          ['baseline', num(cs.baseline.medianMs), cs.baseline.runsMs.join(' · ')],
        ],
      ),
    );
    out.push('');
  }

  if (report.warnings.length > 0) {
    out.push('## Notes from this run', '');
    for (const w of report.warnings) out.push(`- ${w}`);
    out.push('');
  }
  out.push(
    'Reproduce: `pnpm bench` (all) or `node bench/run.mjs compare|growth|soak|cold` after `pnpm --filter @plant-store/api build`; knobs in bench/README.md.',
    '',
  );
  return out.join('\n');
}
