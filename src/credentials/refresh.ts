import type { Credentials, CredentialsProvider } from "./types.js";

/** Milliseconds since the epoch; injectable so tests can move time. */
export type Clock = () => number;

/** Refresh this long before expiry (the SDK's own margin). */
export const REFRESH_MARGIN_MS = 5 * 60 * 1000;

/**
 * Cache temporary credentials and fetch new ones {@link REFRESH_MARGIN_MS} before they expire; concurrent callers share one
 * fetch, and `first` is used once before any. The lifetime is read on `serverNow`, the issuer's clock (a local one ahead would
 * see a fresh session as nearly expired), then counted on `clock`.
 */
export function refreshing(fetch: () => Promise<Credentials>, clock: Clock = Date.now, serverNow: Clock = Date.now, first?: Credentials): CredentialsProvider {
  let current: Credentials | undefined;
  let refreshAt = Infinity;
  let pending: Promise<Credentials> | undefined;
  let seed = first;
  const renew = async (): Promise<Credentials> => {
    const c = seed ?? (await fetch());
    seed = undefined;
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
