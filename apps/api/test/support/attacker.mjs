// An abusive client, run as its own process so its work never delays the victim's measurements.
// Argument: JSON {base, token, ms, loops: [{what, path, method?, body?, concurrency}]}. Each loop
// repeats its request `concurrency` times in parallel until `ms` have passed, reading every answer
// whole. Prints a JSON count of answers by `<what> <status>` (status 0: no answer).
const { base, token, ms, loops } = JSON.parse(process.argv[2]);
const deadline = performance.now() + ms;
const counts = {};

async function repeat({ what, path, method = 'GET', body }) {
  const headers = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  while (performance.now() < deadline) {
    let status = 0;
    try {
      const res = await fetch(`${base}${path}`, { method, headers, body });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      // counted as 0
    }
    counts[`${what} ${status}`] = (counts[`${what} ${status}`] ?? 0) + 1;
  }
}

await Promise.all(loops.flatMap((loop) => Array.from({ length: loop.concurrency }, () => repeat(loop))));
process.stdout.write(JSON.stringify(counts));
