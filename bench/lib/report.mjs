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
const HEALTH_HEAD = ['non-2xx', 'errors', 'peak RSS MiB', 'server CPU'];
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
  const load1 = m.loadAverageAtStart[0];
  if (load1 > 0.5)
    out.push(
      `> **Measured under contention**: the load average was ${load1} at start (other work on this machine), so these figures are noisy and not the official ones.`,
      '',
    );

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
  if (report.chart) out.push(`![The api beside its baselines](${report.chart})`, '');

  const c = report.compare?.summary;
  if (c) {
    out.push(
      `## Side by side: median of ${s.runs} interleaved run(s) each, ${s.connections} connections, ${s.durationSeconds} s measured after ${s.warmupSeconds} s warm-up, ids ${s.ids}`,
      '',
    );
    const rows = Object.entries(c).map(([name, r]) =>
      r.runs === 0
        ? failedRow(r.title ?? name, 15, r.error)
        : [
            r.title ?? name,
            r.against === name ? '—' : r.against,
            int(r.reqPerSec),
            num(r.serverCpuUsPerRequest),
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
          'against',
          'req/s',
          'server CPU µs/req',
          'creates/s (reads: 200s/s)',
          '× its baseline',
          'p50 ms',
          'p99 ms',
          'p99 × baseline',
          ...HEALTH_HEAD,
          'load CPU',
          'per run',
        ],
        rows,
      ),
    );
    out.push('');
    for (const [name, r] of Object.entries(c)) {
      if (r.backlogSeconds)
        out.push(
          `- ${name}: outbox backlog when the load stopped, in seconds of traffic, per run: ${r.backlogSeconds.join(' · ')}`,
        );
      if (r.otlp)
        out.push(
          `- ${name}: spans the collector received per run, 5.5 s after the load (2 per request, warm-up and the check included, when none was dropped): ${r.otlp.map((o) => `${o.spans} in ${o.requests} exports`).join(' · ')}`,
        );
    }
    out.push('');
  }

  const im = report.import;
  if (im) out.push(...renderImport(im, s));

  const b = report.backlog;
  if (b) {
    out.push(
      `## Webhook backlog: ${b.seconds} s of REST creates with one subscriber (fast receiver on loopback)`,
      '',
    );
    if (b.error) out.push(`Failed: ${b.error}`);
    else
      out.push(
        table(
          [
            'creates/s',
            'p99 ms',
            'non-2xx',
            'errors',
            'acknowledged',
            'delivered',
            'pending at the end',
            'backlog (s of traffic)',
            'peak RSS MiB',
          ],
          [
            [
              int(b.createsPerSec),
              ms(b.p99),
              num(b.non2xx),
              num(b.errors),
              num(b.acked),
              num(b.received),
              num(b.pending),
              num(b.backlogSeconds),
              num(b.peakRssMb),
            ],
          ],
        ),
      );
    out.push('');
  }

  const e = report.events;
  if (e) out.push(...renderEvents(e));

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
            'max RSS, 2nd minute',
            'max RSS, last minute',
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
              num(k.secondMinuteMaxMb),
              num(k.lastMinuteMaxMb),
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

  const p = report.profile;
  if (p && Object.keys(p).length > 0) {
    out.push(
      `## Where the time goes: the api under \`node --cpu-prof\`, ${s.profileSeconds} s of each scenario`,
      '',
      'Self time (the function itself, not what it calls), as a share of the time the server process was busy (the profile covers its whole life, start-up and warm-up included; idle time left out); "(program)" is native code outside JavaScript (the HTTP parser, syscalls, SQLite), "native" are V8 built-ins. Bundled code is mapped back to its package and line through the source map.',
      '',
    );
    for (const [name, r] of Object.entries(p)) {
      if (r.error) {
        out.push(`### ${name}`, '', `Failed: ${r.error}`, '');
        continue;
      }
      out.push(
        `### ${r.title} (${int(r.createsPerSec)}/s under the profiler, busy ${r.busyPct}% of the time)`,
        '',
      );
      out.push(
        `By package: ${r.packages
          .slice(0, 12)
          .map((x) => `${x.package} ${x.selfPct}%`)
          .join(' · ')}`,
        '',
      );
      out.push(
        table(
          ['self %', 'package', 'where', 'code'],
          r.functions
            .slice(0, 12)
            .map((f) => [f.selfPct, f.package, f.where, `\`${f.code.replace(/`/g, "'")}\``]),
        ),
      );
      out.push('');
    }
  }

  if (report.warnings.length > 0) {
    out.push('## Notes from this run', '');
    for (const w of report.warnings) out.push(`- ${w}`);
    out.push('');
  }
  out.push(
    'Reproduce: `pnpm bench` (all) or `node bench/run.mjs compare|import|backlog|events|growth|soak|cold|profile` after `pnpm build` (the api and the client); knobs in bench/README.md.',
    '',
  );
  return out.join('\n');
}

function renderImport(im, s) {
  const n = im.plants.toLocaleString('en-US');
  const sum = im.summary;
  const out = [
    `## Bulk import and export: \`plants import\` / \`plants export\` of ${n} plants, ${im.runs} interleaved round(s)`,
    '',
    `Each round, in rotated order: the tRPC batched scenario of the side-by-side runs (${s.batch} calls a request, ${s.connections} connections, ${s.durationSeconds} s after ${s.warmupSeconds} s warm-up, fresh api), and a fresh api ` +
      `(started the same way: RATE_LIMIT_MAX=1000000000) into which the real \`plants import <file> --json\` process (bin/plants.js, pinned to the load core) loads an NDJSON file of ${n} plants, then \`plants export > file\` reads them back. ` +
      'The import is timed from spawn to exit (start-up and its first checking request included); both must exit 0, the import count every plant created, the store hold exactly them and the export be them, line for line, in id order. ' +
      "CPU µs a plant: the CLI's (read from /proc every 100 ms, so slightly short) and the api's over the import; the api's a create under the batched load beside it.",
    '',
    table(
      [
        'round',
        'order',
        'batched creates/s',
        'batched: api CPU µs/create',
        'import s',
        'import plants/s',
        'import ÷ batched',
        'CLI CPU µs/plant',
        'api CPU µs/plant',
        'CLI / api CPU busy',
        'export s',
        'export lines',
        'api peak RSS MiB',
      ],
      im.rounds.map((r) => [
        r.round,
        r.order.join(' → '),
        int(r.batchCreatesPerSec),
        num(r.batchServerCpuUsPerCreate),
        r.import ? r.import.seconds.toFixed(2) : r.errors?.join('; ').slice(0, 160),
        int(r.import?.plantsPerSec),
        x(r.ratio),
        num(r.import?.cliCpuUsPerPlant),
        num(r.import?.serverCpuUsPerPlant),
        r.import ? `${pct(r.import.cliCpu)} / ${pct(r.import.serverCpu)}` : '',
        r.export ? r.export.seconds.toFixed(2) : '',
        num(r.export?.lines),
        num(r.serverPeakRssMb),
      ]),
    ),
    '',
  ];
  if (sum.rounds > 0)
    out.push(
      `Median of ${sum.rounds} round(s): import ${int(sum.importPlantsPerSec)} plants/s (${sum.importSeconds} s), ` +
        `**${x(sum.ratio)} the batched creates/s** (median of the rounds' ratios, ${x(sum.ratioMin)}–${x(sum.ratioMax)}; ` +
        `${x(sum.ratioOfMedians)} as a ratio of the medians, ${int(sum.batchCreatesPerSec)} creates/s batched); ` +
        `export **${sum.exportSeconds} s** (${sum.exportMin}–${sum.exportMax} s). ` +
        `CPU a plant: the CLI ${num(sum.cliCpuUsPerPlant)} µs, the api ${num(sum.serverCpuUsPerPlant)} µs under the import ` +
        `(batches of up to 100 calls) vs ${num(sum.batchServerCpuUsPerCreate)} µs a create under the batched load (${s.batch} a request).`,
      '',
    );
  return out;
}

/** ` (mean of a and b creates/s)` for a figure that is the mean of runs. */
const runsOf = (t) => (t.runs ? ` (mean of ${t.runs.map(int).join(' and ')})` : '');

function renderEvents(e) {
  const out = [];
  const n = e.streams.toLocaleString('en-US');
  out.push(
    `## Event streams: ${n} open \`GET /plants/events\` streams, ${e.rate.toLocaleString('en-US')} creates/s for ${e.seconds} s`,
    '',
    `The api with EVENT_STREAMS_PER_TOKEN=${e.limits.EVENT_STREAMS_PER_TOKEN} and EVENT_STREAMS_MAX=${e.limits.EVENT_STREAMS_MAX} (the defaults, 100 and 2,000, would refuse one token ${n} streams). ` +
      'The streams are read by bench/streams.mjs on the load core, which also sends the creates, open loop, at the fixed rate. ' +
      `Latency is timed on every ${e.sampleEvery}th stream (the others only count their events): delivery − the event's createdAt (judged: the store stamps it before the commit, so this bounds commit-to-delivery from above; same machine's clock, ms precision), ` +
      "delivery − the create's send time (adds the create's own trip before its commit), and delivery − the create's 200 at the client (negative: the event came first).",
    '',
  );
  const rows = [];
  const latencyRow = (label, x) => {
    if (!x) return;
    if (x.error) {
      rows.push([label, 'failed', '', '', '', '', '', '', String(x.error).slice(0, 120)]);
      return;
    }
    const p = x.paced;
    const l = (k) => (p[k] ? `${ms(p[k].p50)} / ${ms(p[k].p99)} / ${ms(p[k].max)}` : 'n/a');
    rows.push([
      label,
      `${num(p.achievedRate)} (${num(p.ok)} ok, ${num(p.other + p.errors)} not)`,
      l('latencyFromSend'),
      l('latencyFromAnswer'),
      l('latencyFromCommit'),
      `${num(p.eventsReceived)} / ${num(p.eventsExpected)}`,
      num(p.streamsCut),
      `${num(x.rssBeforeMb)} → ${num(x.rssIdleMb)} (+${num(x.addedRssMb)})`,
      pct(p.workerCpu),
    ]);
  };
  latencyRow('SQLite, one instance', e.sqlite);
  latencyRow('PostgreSQL, creates to A, streams on B', e.postgres);
  out.push(
    table(
      [
        'setup',
        'creates/s sent',
        'from send p50 / p99 / max ms',
        'from the 200 p50 / p99 / max ms',
        'from createdAt p50 / p99 / max ms',
        'events delivered / expected',
        'streams cut',
        'RSS MiB before → idle streams',
        'worker CPU',
      ],
      rows,
    ),
  );
  out.push('');
  for (const [label, x] of [
    ['SQLite', e.sqlite],
    ['PostgreSQL', e.postgres],
  ]) {
    const p = x && !x.error ? x.paced : undefined;
    if (!p?.p99FromSendBySecond) continue;
    out.push(
      `- ${label}: p99 from send by the second the create was sent in: ${p.p99FromSendBySecond.map(ms).join(' · ')} ms ` +
        `(from createdAt: ${p.p99FromCommitBySecond?.map(ms).join(' · ') ?? 'n/a'} ms); ` +
        `${num(p.eventsPerRead)} events per read on a stream (what one server write carried); ` +
        `the sender ran at most ${ms(p.maxSendLagMs)} ms behind its schedule.`,
    );
  }
  out.push('');
  const sq = e.sqlite;
  if (sq && !sq.error) {
    out.push(
      `Create throughput (SQLite, autocannon as in the side-by-side runs): with no stream open; with the ${n} streams open asking for plant.deleted only, so receiving no event ("open streams and no events", the row judged; run in the order none, filtered, filtered, none); and with the ${n} streams open, each receiving every create's event (the stricter case, not judged):`,
      '',
      table(
        [
          'streams open',
          'creates/s',
          'p50 ms',
          'p99 ms',
          'non-2xx',
          'errors',
          'load CPU',
          'server CPU µs per create',
          '÷ none',
        ],
        [
          [`none${runsOf(sq.without)}`, sq.without, null],
          ...(sq.filtered
            ? [
                [
                  `${n}, ${sq.filtered.types} only${runsOf(sq.filtered)}; ${num(sq.filtered.eventsReceived)} events received, ${num(sq.filtered.streamsCut)} cut`,
                  sq.filtered,
                  sq.filtered.filteredVsWithout,
                ],
              ]
            : []),
          [`${n}, every event`, sq.withStreams, sq.withVsWithout],
        ].map(([label, t, r]) => [
          label,
          int(t.createsPerSec),
          ms(t.p50),
          ms(t.p99),
          num(t.non2xx),
          num(t.errors),
          pct(t.loadCpu),
          num(t.cpuUsPerCreate),
          r === null ? '' : x(r),
        ]),
      ),
      '',
    );
  }
  return out;
}
