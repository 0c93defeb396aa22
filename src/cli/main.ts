#!/usr/bin/env node
/**
 * `objstate`: a thin shell over the library. Exit codes: 0 ok, 1 error, 2 usage or bad
 * input, 3 state locked, 4 digest mismatch (see io.ts).
 *
 * This entry point only prepares the process: the AWS SDK's Node-version warning is noise
 * to users (the pinned SDK runs on Node 20), so it is switched off before anything can
 * load the SDK; and Node warnings are printed as one `objstate: warning:` line.
 */
export {};

process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] ??= "true";

const { warn } = await import("./runtime.js");
process.removeAllListeners("warning");
process.on("warning", (w: Error & { code?: string }) => warn(w.message, w.code ?? `${w.name}:${w.message}`));

const { run } = await import("./program.js");
process.exitCode = await run(process.argv);
