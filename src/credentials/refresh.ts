import type { Credentials, CredentialsProvider } from "./types.js";

/** Milliseconds since the epoch; injectable so tests can move time. */
export type Clock = () => number;

/** Refresh this long before expiry (the SDK's own margin). */
export const REFRESH_MARGIN_MS = 5 * 60 * 1000;

/**
 * Cache temporary credentials and fetch new ones *before* they expire (when less than
 * {@link REFRESH_MARGIN_MS} of their lifetime remains), never after a failure. The
 * lifetime is read off the expiry at fetch time, against `serverNow` — the issuer's
 * clock, since that is the clock the expiry is written in (a local clock ten minutes
 * ahead would otherwise see a 15-minute session as nearly expired and fetch again on
 * every call) — and then counted on `clock`, so a clock that tests move decides
 * consistently. Concurrent callers share one fetch.
 */
export function refreshing(fetch: () => Promise<Credentials>, clock: Clock = Date.now, serverNow: Clock = Date.now): CredentialsProvider {
  let current: Credentials | undefined;
  let refreshAt = Infinity;
  let pending: Promise<Credentials> | undefined;
  const renew = async (): Promise<Credentials> => {
    const c = await fetch();
    const lifetime = c.expiration === undefined ? Infinity : c.expiration.getTime() - serverNow();
    refreshAt = clock() + lifetime - REFRESH_MARGIN_MS;
    current = c;
    return c;
  };
  return async () => {
    if (current !== undefined && clock() < refreshAt) return current;
    pending ??= renew().finally(() => (pending = undefined));
    return pending;
  };
}
