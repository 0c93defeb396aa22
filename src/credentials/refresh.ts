import type { Credentials, CredentialsProvider } from "../store/types.js";

/** Milliseconds since the epoch; injectable so tests can move time. */
export type Clock = () => number;

/** Refresh this long before expiry (the SDK's own margin). */
export const REFRESH_MARGIN_MS = 5 * 60 * 1000;

/**
 * Cache temporary credentials and fetch new ones *before* they expire (when less than
 * {@link REFRESH_MARGIN_MS} remain, by `clock`), never after a failure. Concurrent
 * callers share one fetch.
 */
export function refreshing(fetch: () => Promise<Credentials>, clock: Clock = Date.now): CredentialsProvider {
  let current: Credentials | undefined;
  let pending: Promise<Credentials> | undefined;
  const fresh = (c: Credentials): boolean => c.expiration === undefined || c.expiration.getTime() - clock() > REFRESH_MARGIN_MS;
  return async () => {
    if (current !== undefined && fresh(current)) return current;
    pending ??= fetch().finally(() => (pending = undefined));
    current = await pending;
    return current;
  };
}
