import { isIP } from "node:net";

/** The client an address counts as for per-client limits: an IPv4 address (`::ffff:a.b.c.d` too) itself, an IPv6 one by its /64. */
export function addressGroup(address: string): string {
  // The forms Node reports, without parsing: IPv4, and IPv4 on a dual-stack socket.
  if (!address.includes(":")) return address;
  if (address.startsWith("::ffff:") && isIP(address.slice(7)) === 4) return address.slice(7);
  const bare = address.split("%")[0] as string;
  const kind = isIP(bare);
  if (kind === 4) return bare;
  if (kind !== 6) return address;
  const groups = ipv6Groups(bare.toLowerCase());
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [hi, lo] = [groups[6] as number, groups[7] as number];
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(":")}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` and a trailing dotted IPv4 expanded). */
function ipv6Groups(address: string): number[] {
  const parse = (part: string): number[] =>
    part === ""
      ? []
      : part.split(":").flatMap((g) => {
          if (!g.includes(".")) return [parseInt(g, 16)];
          const [a, b, c, d] = g.split(".").map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        });
  const gap = address.indexOf("::");
  if (gap < 0) return parse(address);
  const head = parse(address.slice(0, gap));
  const tail = parse(address.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}
