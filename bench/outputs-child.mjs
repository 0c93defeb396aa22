// One cold measurement for the scan threshold of the outputs extractor, in a fresh process
// (a state is read once per process, so the scanner usually runs as cold code).
//   node outputs-child.mjs BYTES scan|parse  -> prints milliseconds
import { extractTopLevel } from "../dist/test/support/extract-outputs.js";
import { realisticState } from "./outputs-state.mjs";

const [bytesArg, how] = process.argv.slice(2);
const state = realisticState({ bytes: Number(bytesArg), outputsFirst: false });
const t = performance.now();
const got = extractTopLevel(state, ["version", "outputs"], { scanThreshold: how === "scan" ? 0 : Infinity });
const ms = performance.now() - t;
if (got.method !== how || !got.members.has("outputs")) throw new Error(`unexpected result: ${got.method}`);
console.log(ms.toFixed(3));
