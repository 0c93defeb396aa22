import { JsonScanner } from "../json/scan.js";

/** For src/server/protocol.ts until it calls `JsonScanner.feedUntil` itself; delete then. */
export class TopLevelScanner {
  scan(b: Uint8Array, stopAt: string): number | undefined {
    const at = new JsonScanner().feedUntil(b, stopAt);
    return at === -1 ? undefined : at;
  }
}
