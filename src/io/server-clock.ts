/**
 * How far each server's clock is from ours: signatures and the expiry of temporary credentials
 * are judged by the server's clock. The SDK measures the offset per client; kept here per
 * server origin, every client of that server (S3 and STS on one Ceph RGW) and the credentials
 * refresher use the latest measurement.
 */

/** Milliseconds to add to `Date.now()` to get the server's time. */
export interface ServerClock {
  offsetMs: number;
}

const clocks = new Map<string, ServerClock>();

/** The shared clock offset of the server at `endpoint` (0 until a response was seen). */
export function serverClockFor(endpoint: string): ServerClock {
  const key = URL.canParse(endpoint) ? new URL(endpoint).origin : endpoint;
  let c = clocks.get(key);
  if (c === undefined) clocks.set(key, (c = { offsetMs: 0 }));
  return c;
}

/** The server's time now, as far as we know it (epoch ms). */
export function serverNow(endpoint: string): number {
  return Date.now() + serverClockFor(endpoint).offsetMs;
}
