/**
 * Reads the rate limit as the document types it: `RateLimit` and `RateLimit-Policy` on every answer,
 * and a 429 (an `Error` body) with `Retry-After` once past it. Run it against an api whose limit is small:
 *   PLANTS_URL=… PLANTS_TOKEN=… pnpm --filter @plant-store/example-openapi-fetch exec tsx src/rate-limit.ts
 */
import createClient from 'openapi-fetch';
import type { paths } from './generated/plant-store.ts';

type TooManyRequests = paths['/plants']['get']['responses'][429];
type Page = paths['/plants']['get']['responses'][200];

const client = createClient<paths>({
  baseUrl: process.env.PLANTS_URL ?? 'http://127.0.0.1:3000',
  headers: { authorization: `Bearer ${process.env.PLANTS_TOKEN}` },
});

for (let request = 1; request <= 100; request += 1) {
  const { data, error, response } = await client.GET('/plants', { params: { query: { limit: 1 } } });
  if (data !== undefined) {
    const left: Page['headers']['RateLimit'] = response.headers.get('ratelimit') ?? '';
    console.log(`request ${request}: ${response.status}, RateLimit ${left}`);
    continue;
  }
  if (response.status !== 429) throw new Error(`request ${request}: ${response.status} ${error?.message}`);
  const retryAfter: TooManyRequests['headers']['Retry-After'] = response.headers.get('retry-after') ?? '';
  const policy: TooManyRequests['headers']['RateLimit-Policy'] =
    response.headers.get('ratelimit-policy') ?? '';
  const body: TooManyRequests['content']['application/json'] = error;
  console.log(
    `request ${request}: 429, Retry-After ${Number(retryAfter) > 0 ? 'in seconds' : retryAfter}, RateLimit-Policy ${policy}`,
  );
  console.log(`${body.error} ${body.message.replace(/\d+ s\.$/, 'N s.')}`);
  break;
}
