/**
 * The state layout of the running command (`--layout`, or the `--config` file's
 * `objstate.layout`): not a field of the seed's objects, so it travels beside the config, as
 * the lock settings do. Set once per command by `gatherSettings`, read by `connect`,
 * `output`, `init`, `synth` and `config`.
 */
import { DEFAULT_LAYOUT, type LayoutName } from "../config/layout.js";

/** The layout and where it came from (undefined: the default). */
export interface LayoutSetting {
  readonly name: LayoutName;
  /** `--layout`, or `FILE (objstate.layout)`; undefined for the default. */
  readonly from: string | undefined;
}

let current: LayoutSetting = { name: DEFAULT_LAYOUT, from: undefined };

export function setLayoutSetting(s: LayoutSetting): void {
  current = s;
}

export function layoutSetting(): LayoutSetting {
  return current;
}
