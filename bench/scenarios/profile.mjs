// `profile`: one run of each api scenario (BENCH_PROFILE_SCENARIOS, default every api scenario of
// this invocation) with the api under `node --cpu-prof`, BENCH_PROFILE_SECONDS measured: where the
// server's time goes, as self time by function and by package (see lib/cpu-profile.mjs). The
// profiler costs throughput, so these runs' figures are not compared with anything.

import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { summariseProfile } from '../lib/cpu-profile.mjs';
import { progress, warn } from '../lib/session.mjs';
import { makeTempDir, removeTempDir } from '../lib/system.mjs';
import { SCENARIOS, scenarioRun } from './compare.mjs';

export async function profile(settings) {
  const asked = process.env.BENCH_PROFILE_SCENARIOS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const names = (asked ?? settings.scenarios).filter((name) => SCENARIOS[name]?.kind === 'api');
  const results = {};
  for (const name of names) {
    const profileDir = makeTempDir(`profile-${name}`, settings.tmpBase);
    try {
      progress(`[profile] ${name}: ${settings.profileSeconds} s under --cpu-prof …`);
      const run = await scenarioRun({ ...settings, profileDir }, SCENARIOS[name], {
        duration: settings.profileSeconds,
        warmup: 1,
      });
      const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
      if (!file) throw new Error('the api wrote no profile (did it exit cleanly?)');
      results[name] = {
        title: SCENARIOS[name].title(settings),
        createsPerSec: Math.round(run.createsPerSec),
        ...summariseProfile(join(profileDir, file)),
      };
      const top = results[name].packages.slice(0, 5).map((p) => `${p.package} ${p.selfPct}%`);
      progress(`[profile] ${name}: ${top.join(', ')}`);
    } catch (error) {
      warn(`profile ${name}: ${error.message}`);
      results[name] = { error: error.message };
    } finally {
      removeTempDir(profileDir);
    }
  }
  return results;
}
