/** `objstate output`: placeholder until DataRemoteStateObjectStore.fetchOutputs() lands. */
import { CliError, EXIT } from "./io.js";

export function outputAction(_name: string | undefined, _opts: Record<string, unknown>): Promise<void> {
  return Promise.reject(new CliError("NOT_IMPLEMENTED", "objstate output is not available yet", EXIT.error));
}
