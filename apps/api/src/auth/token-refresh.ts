import type { Logger } from 'pino';
import type { IssuedToken, TokenVerifier } from './tokens.ts';

/** Reloads in a row that may fail before issued tokens are refused (the verifier's age bound). */
export const MISSED_RELOADS_BEFORE_REFUSAL = 3;

export type TokenRefresh = { stop(): void };

/**
 * Loads the issued tokens into `verifier` now (a failure is the caller's: the service does not
 * start), then every `intervalMs`, one reload at a time: the next starts `intervalMs` after the
 * previous one ended, so a slow reload is never started twice and an older result never replaces a
 * newer one. Calls `onReload` after each reload that succeeded, once the verifier holds its result.
 * Logs each failed reload, and once each way when the verifier starts refusing issued tokens (no
 * reload for its age bound) and when a reload brings them back.
 */
export async function startTokenRefresh(options: {
  verifier: TokenVerifier;
  load: () => Promise<readonly IssuedToken[]>;
  intervalMs: number;
  log: Logger;
  onReload?: () => void;
}): Promise<TokenRefresh> {
  const { verifier, load, intervalMs, log, onReload } = options;
  verifier.setIssued(await load());
  let refused = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const reload = async () => {
    try {
      verifier.setIssued(await load());
      onReload?.();
      if (refused) log.info('tokens reloaded: issued tokens are accepted again');
      refused = false;
    } catch (error) {
      log.warn({ reason: String(error) }, 'could not reload tokens');
      if (!refused && verifier.issuedStale()) {
        refused = true;
        log.error(
          { missedReloads: MISSED_RELOADS_BEFORE_REFUSAL },
          'tokens could not be reloaded: issued tokens are refused until a reload succeeds (API_TOKENS still work)',
        );
      }
    }
    if (!stopped) timer = setTimeout(reload, intervalMs).unref();
  };
  timer = setTimeout(reload, intervalMs).unref();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
