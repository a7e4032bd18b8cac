// The machine and the checkout a run was measured on, for the head of the report.

import { execFileSync } from 'node:child_process';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { round1, round2 } from './format.mjs';
import { fileSystemOf, ROOT } from './system.mjs';

export function machineInfo(settings) {
  const cpuList = cpus();
  let commit;
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {}
  return {
    date: new Date().toISOString(),
    cpuModel: cpuList[0]?.model?.trim() ?? 'unknown',
    cores: cpuList.length,
    memoryGb: round1(totalmem() / 2 ** 30),
    os: `${platform()} ${release()}`,
    node: process.version,
    commit,
    dataDir: settings.tmpBase,
    dataDirFs: fileSystemOf(settings.tmpBase),
    loadAverageAtStart: loadAverage(),
  };
}

export function loadAverage() {
  return loadavg().map(round2);
}
