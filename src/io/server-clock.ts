/**
 * How far each server's clock is from ours, per origin: signatures and temporary credentials are judged
 * by it, so every client of that server (S3 and STS on one Ceph RGW) and the refresher use the SDK's latest measurement.
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
