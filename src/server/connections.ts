/** Caps on open connections, per client and in all, and the minimum rate of request bodies, also of one node:http discards (docs/decisions/006, 007). */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ObjstateError } from "../errors.js";
import { addressGroup } from "./address.js";
import { hasBody } from "./gate.js";
import { isReceiving, MIN_BODY_BYTES_PER_WINDOW } from "../io/http-body.js";
import type { Logger } from "./log.js";

/** Refusals and drops are logged at most this often (a flood must not flood the log). */
const REPORT_EVERY_MS = 60_000;

/** `windowMs`: the window of the minimum-rate rule (the client timeout). */
type ConnectionLimits = { readonly maxConnections?: number | undefined; readonly maxPerClient?: number | undefined; readonly windowMs: number };

/** A request whose body has not all arrived; `mark` is `socket.bytesRead` when the window began. */
type Watched = { readonly req: IncomingMessage; readonly socket: Socket; mark: number; since: number };

/** An open connection: its client's address group, and the request it is answering (if any). */
type Open = { readonly socket: Socket; readonly client: string; req: IncomingMessage | undefined };

/** A cap as given, when it is a whole number of at least 1 (node reads 0 as "no cap"). */
function count(name: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new ObjstateError("INVALID_LIMIT", `${name} must be a whole number of at least 1, got ${n}`);
  return n;
}

/** Closes a connection over the per-client cap before a byte; at the total cap the busiest address's oldest idle one, else the new one; drops too slow a body. */
export class ConnectionGuard {
  readonly maxConnections: number;
  readonly maxPerClient: number;
  private readonly open = new Map<string, number>();
  /** Every open connection by its peer's address and port (the same for the raw socket and, under TLS, its TLS socket), oldest first. */
  private readonly sockets = new Map<string, Open>();
  private readonly watched = new Set<Watched>();
  private readonly sweep: NodeJS.Timeout;
  private refused = 0;
  private dropped = 0;
  private reported = -Infinity;

  constructor(
    server: Server,
    private readonly limits: ConnectionLimits,
    private readonly logger: Logger,
  ) {
    this.maxConnections = count("maxConnections", limits.maxConnections ?? 1024);
    this.maxPerClient = count("maxConnectionsPerClient", limits.maxPerClient ?? 64);
    // The raw TCP socket, also under TLS (before the handshake).
    server.on("connection", (socket: Socket) => this.accept(socket));
    server.on("request", (req: IncomingMessage, res: ServerResponse) => this.watch(req, res));
    this.sweep = setInterval(() => this.check(), Math.max(50, Math.min(1000, Math.floor(limits.windowMs / 4))));
    this.sweep.unref();
    server.on("close", () => clearInterval(this.sweep));
  }

  private accept(socket: Socket): void {
    const client = addressGroup(socket.remoteAddress ?? "unknown");
    const n = (this.open.get(client) ?? 0) + 1;
    if (n > this.maxPerClient || (this.sockets.size >= this.maxConnections && !this.makeRoom(n))) {
      this.refused += 1;
      socket.destroy();
      return;
    }
    this.open.set(client, n);
    const key = peer(socket);
    this.sockets.set(key, { socket, client, req: undefined });
    socket.once("close", () => {
      this.sockets.delete(key);
      const left = (this.open.get(client) ?? 1) - 1;
      if (left === 0) this.open.delete(client);
      else this.open.set(client, left);
    });
  }

  /** Close the oldest connection not answering a whole request of the address holding the most (at least `n`); false when none. */
  private makeRoom(n: number): boolean {
    let victim: Open | undefined;
    let most = n - 1;
    for (const o of this.sockets.values()) {
      const held = this.open.get(o.client) ?? 0;
      if (held > most && (o.req === undefined || !o.req.complete)) {
        victim = o;
        most = held;
      }
    }
    if (victim === undefined) return false;
    this.sockets.delete(peer(victim.socket));
    this.dropped += 1;
    victim.socket.destroy();
    return true;
  }

  private watch(req: IncomingMessage, res: ServerResponse): void {
    const o = this.sockets.get(peer(req.socket));
    if (o !== undefined) {
      o.req = req;
      res.once("finish", () => o.req === req && (o.req = undefined));
    }
    if (req.complete || !hasBody(req)) return;
    this.watched.add({ req, socket: req.socket, mark: req.socket.bytesRead, since: performance.now() });
  }

  private check(): void {
    const now = performance.now();
    for (const w of this.watched) {
      const { req, socket } = w;
      if (req.complete || socket.destroyed) {
        this.watched.delete(w);
        continue;
      }
      // A body read through io/http-body.ts is timed there (408); one the server holds back (buffer full) is not the client's fault.
      const excused = isReceiving(req) || req.readableLength >= req.readableHighWaterMark;
      if (!excused && now - w.since < this.limits.windowMs) continue;
      if (!excused && socket.bytesRead - w.mark < MIN_BODY_BYTES_PER_WINDOW) {
        this.dropped += 1;
        this.watched.delete(w);
        socket.destroy();
        continue;
      }
      w.mark = socket.bytesRead;
      w.since = now;
    }
    if ((this.refused > 0 || this.dropped > 0) && now - this.reported >= REPORT_EVERY_MS) {
      this.logger.event("warn", "connections refused or dropped", {
        refusedOverCaps: this.refused,
        droppedTooSlow: this.dropped,
        maxConnections: this.maxConnections,
        maxConnectionsPerClient: this.maxPerClient,
      });
      this.refused = 0;
      this.dropped = 0;
      this.reported = now;
    }
  }
}

function peer(socket: Socket): string {
  return `${socket.remoteAddress ?? ""}|${socket.remotePort ?? ""}`;
}
