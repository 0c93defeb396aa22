/**
 * The web console (issue 13): server-rendered pages over a {@link ConsoleApi}, mounted by
 * `objstate serve` through {@link handleConsole}.
 *
 * @packageDocumentation
 */
export { handleConsole, HISTORY_LIMIT, TIMELINE_LIMIT } from "./handler.js";
export { backendConsoleApi, lockView, type BackendConsoleOptions, type ConsoleBackend } from "./adapter.js";
export { CsrfTokens, type CsrfOptions } from "./csrf.js";
export { CONTENT_SECURITY_POLICY } from "./assets.js";
export type {
  ConsoleAnswer,
  ConsoleApi,
  ConsoleContext,
  ConsoleLogEntry,
  ConsoleRole,
  LastWrite,
  LockView,
  OutputView,
  RollbackResult,
  VersionView,
  WorkspaceSummary,
} from "./types.js";
