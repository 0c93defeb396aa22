#!/usr/bin/env node
/**
 * `objstate`: a thin shell over the library. Exit codes: see `EXIT` in io.ts.
 *
 * This entry point only prepares the process: the AWS SDK's Node-version warning is noise
 * to users (the pinned SDK runs on Node 20), so it is switched off before anything can
 * load the SDK; on Node 22+ compiled code is cached between runs; Node warnings are
 * printed as one `objstate: warning:` line; a reader that
 * closes standard output (`| head`) ends the process quietly; and anything no one caught
 * is one `objstate: error:` line with a code, never a stack (unless OBJSTATE_DEBUG=1).
 */
import * as nodeModule from "node:module";

process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] ??= "true";
// Node 22.1+: the compiled code for objstate and its dependencies (loading the AWS SDK is
// most of a server command's start-up) is kept on disk, in the OS temp directory, and
// reused by the next run; NODE_DISABLE_COMPILE_CACHE=1 turns it off. Not on Node 20.
(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();

// No top-level await: the published build is CommonJS (scripts/build.mjs), where it cannot be.
async function main(): Promise<void> {
  const { warn } = await import("./warn.js");
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
