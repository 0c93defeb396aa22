/**
 * How far each server's clock is from ours. Signatures and the expiry of temporary
 * credentials are judged by the server's clock, so a client whose clock is off must
 * sign and decide when to refresh by the server's time, not its own.
 *
 * The SDK measures the offset from the `Date` header of every response (and corrects it
 * on `RequestTimeTooSkewed`), but only for the one client that saw the response; here
 * the measurement is kept per server origin so that every client of that server (S3 and
 * STS on one Ceph RGW, say), and the credentials refresher, use the latest one.
 */

/** Milliseconds to add to `Date.now()` to get the server's time. */
export interface ServerClock {
  offsetMs: number;
}

const clocks = new Map<string, ServerClock>();

/** The origin (`scheme://host:port`) of an endpoint URL, or the text itself when it is no URL. */
function originOf(endpoint: string): string {
  try {
    return new URL(endpoint).origin;
  } catch {
    return endpoint;
  }
}

/** The shared clock offset of the server at `endpoint` (0 until a response was seen). */
export function serverClockFor(endpoint: string): ServerClock {
  const key = originOf(endpoint);
  let c = clocks.get(key);
  if (c === undefined) {
    c = { offsetMs: 0 };
    clocks.set(key, c);
  }
  return c;
}

/** The server's time now, as far as we know it (epoch ms). */
export function serverNow(endpoint: string): number {
  return Date.now() + serverClockFor(endpoint).offsetMs;
}
