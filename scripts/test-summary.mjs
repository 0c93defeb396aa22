// A node:test reporter that prints nothing when every test passed and, when some failed, one
// line per failed test at the very end of the run (file:line, the test's path, the error's first
// line), so a long log ends with what to look at. Used beside the spec reporter.
import path from "node:path";

export default async function* summary(source) {
  const failed = [];
  const open = [];
  for await (const { type, data } of source) {
    if (type === "test:start") open[data.nesting] = data.name;
    if (type !== "test:fail" || data.details?.error?.failureType === "subtestsFailed") continue;
    const error = data.details?.error;
    const first = String(error?.cause ?? error ?? "failed")
      .split("\n")[0]
      .slice(0, 200);
    const where = data.file ? `${path.relative(process.cwd(), data.file)}:${data.line ?? "?"}` : "?";
    failed.push(`  ${where}  ${[...open.slice(0, data.nesting), data.name].join(" > ")}: ${first}`);
  }
  if (failed.length > 0) yield `\n${failed.length} failed test(s):\n${failed.join("\n")}\n`;
}
