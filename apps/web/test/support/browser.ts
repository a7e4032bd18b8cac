import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
/** Debian's Chromium, as the project's notes say to run it (a fresh profile per launch). */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/** What one browser page did that a test may look at. */
export type Watched = {
  page: Page;
  context: BrowserContext;
  /** Every request: method, URL and headers. */
  requests: { method: string; url: string; headers: Record<string, string> }[];
  /** Content-Security-Policy violations, uncaught errors, requests to other origins. */
  problems: string[];
};

/**
 * A page in a browser context of its own (own cache and storage, as another person's browser),
 * that may reach only `origin`: a request elsewhere is a problem, and is refused unless `cache`
 * is asked for (Playwright turns the HTTP cache off in a context that intercepts requests).
 */
export async function openPage(browser: Browser, origin: string, { cache = false } = {}): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  const page = await context.newPage();
  const watched: Watched = { page, context, requests: [], problems: [] };
  if (!cache) {
    await context.route('**/*', (route) =>
      new URL(route.request().url()).origin === origin ? route.fallback() : route.abort('blockedbyclient'),
    );
  }
  page.on('request', (request) => {
    watched.requests.push({ method: request.method(), url: request.url(), headers: request.headers() });
    if (new URL(request.url()).origin !== origin)
      watched.problems.push(`request to another origin: ${request.url()}`);
  });
  page.on('pageerror', (error) => watched.problems.push(`page error: ${error.message}`));
  // Every CSP violation becomes a problem, whatever Chromium itself reports.
  await page.exposeFunction('reportCspViolation', (text: string) => watched.problems.push(text));
  await page.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) =>
      window.reportCspViolation('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI + ' at ' + event.sourceFile + ':' + event.lineNumber + ':' + event.columnNumber));`,
  });
  return watched;
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export type AxeViolation = { id: string; impact: string | null; help: string; targets: string[] };

/**
 * Runs axe-core on the page as it is now. It is injected through the DevTools protocol, which
 * the page's CSP does not govern, so the page keeps its real policy while it is audited.
 */
export async function runAxe(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  return page.evaluate(async () => {
    const { axe } = window as unknown as {
      axe: {
        run(
          context: Document,
          options: object,
        ): Promise<{
          violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[];
        }>;
      };
    };
    const { violations } = await axe.run(document, { resultTypes: ['violations'] });
    return violations.map(({ id, impact, help, nodes }) => ({
      id,
      impact,
      help,
      targets: nodes.map((node) => node.target.join(' ')),
    }));
  });
}

/** The violations people are most hurt by: what the issue allows none of. */
export function seriousOrCritical(violations: readonly AxeViolation[]): AxeViolation[] {
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}
