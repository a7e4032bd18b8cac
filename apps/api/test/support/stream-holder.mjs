// A client holding event streams, run as its own process so a test can kill it (SIGKILL): its
// sockets then close as the kernel closes them, with no goodbye from the client.
// Argument: JSON {token, urls, until?}. Opens a GET of each url and keeps reading every body; once
// every answer's head has arrived (and, with `until`, every 200 body has shown that text), prints
// one line, the JSON list of the statuses. Then it waits.
const { token, urls, until } = JSON.parse(process.argv[2]);

const statuses = await Promise.all(
  urls.map(async (url) => {
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    const seen = new Promise((resolve) => {
      void (async () => {
        const decoder = new TextDecoder();
        let text = '';
        for await (const chunk of response.body ?? []) {
          text += decoder.decode(chunk, { stream: true });
          if (until !== undefined && text.includes(until)) resolve();
        }
      })().catch(() => {});
    });
    if (until !== undefined && response.status === 200) await seen;
    return response.status;
  }),
);
process.stdout.write(`${JSON.stringify(statuses)}\n`);
setInterval(() => {}, 60_000);
