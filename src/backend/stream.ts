/** A state read while it is passed on (the fast lane's {@link StreamedRead}, src/fast/streamed-read.ts). */
import { ObjstateError } from "../errors.js";
import type { BackendContext } from "./context.js";
import { StreamedRead, type StateSink, type StreamOptions } from "../fast/streamed-read.js";
import { readCommitted } from "./read.js";
import type { StateRead } from "./results.js";

/** `streamed`: every byte went to the sink (end the answer); otherwise nothing did, and `state` is the read's result. */
export type StreamResult =
  { readonly streamed: true; readonly size: number; readonly md5: string } | { readonly streamed: false; readonly state: StateRead | null };

/** The digest-checked read streamed to `sink`; bytes that changed or did not match once they went out are `DIGEST_MISMATCH`. */
export async function streamState(ctx: BackendContext, workspace: string, sink: StateSink, options: StreamOptions = {}): Promise<StreamResult> {
  const out = new StreamedRead(sink, options);
  let found: StateRead | null;
  try {
    found = await readCommitted(ctx, workspace, {}, out);
  } catch (e) {
    out.abandon();
    throw e;
  }
  if (!out.started) return { streamed: false, state: found };
  const md5 = out.finish(found);
  if (md5 === undefined) {
    throw new ObjstateError(
      "DIGEST_MISMATCH",
      `the state of workspace ${workspace} changed or did not match its digest while it was being sent; the answer was cut off: read it again`,
      { details: { workspace } },
    );
  }
  return { streamed: true, size: (found as StateRead).body.length, md5 };
}
