#!/usr/bin/env node
/**
 * `objstate`: prepares the process, then runs the command tree. The AWS SDK's Node-version
 * warning is off (the pinned SDK runs on Node 20); Node warnings are one `objstate: warning:`
 * line; a reader that closes standard output ends the process quietly; anything no one caught
 * is one `objstate: error:` line, never a stack (unless OBJSTATE_DEBUG=1).
 */
import * as nodeModule from "node:module";

process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] ??= "true";
// Node 22.1+: compiled code is cached on disk between runs (NODE_DISABLE_COMPILE_CACHE=1 turns it off).
(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();

// No top-level await: the published build is CommonJS (scripts/build.mjs), where it cannot be.
async function main(): Promise<void> {
  const { warn } = await import("./term.js");
  const { isClosedOutput } = await import("./io.js");
  const { EXIT } = await import("../error-codes.js");
  process.removeAllListeners("warning");
  process.on("warning", (w: Error & { code?: string }) => warn(w.message, w.code ?? `${w.name}:${w.message}`));

  let outputFailed: number | undefined;
  // EPIPE arrives as an 'error' event on the stream, after the write that caused it.
  process.stdout.on("error", (e) => {
    outputFailed = isClosedOutput(e) ? EXIT.outputClosed : EXIT.error;
    process.exitCode = outputFailed;
  });
  // Nothing can be said once stderr is gone; the exit code still tells.
  process.stderr.on("error", () => undefined);

  const { reportError, run } = await import("./program.js");
  const lastResort = (e: unknown): void => {
    if (isClosedOutput(e)) process.exit(EXIT.outputClosed);
    reportError(e);
    process.exit(EXIT.error);
  };
  process.on("uncaughtException", lastResort);
  process.on("unhandledRejection", lastResort);

  const code = await run(process.argv);
  process.exitCode = outputFailed ?? code;
}

void main();
