/**
 * `objstate/state`: pure functions over state documents — `diffStates` and its text form.
 * A subpath of its own, like `objstate/config`, so importing the package (for synthesis, or
 * the backend) does not load the state parsers and comparers.
 *
 * @packageDocumentation
 */
/// <reference types="node" preserve="true" />
export {
  diffStates,
  formatStateDiff,
  isEmptyStateDiff,
  SENSITIVE,
  type Address,
  type FormatStateDiffOptions,
  type OutputChange,
  type OutputEntry,
  type ResourceChange,
  type StateDiff,
  type StateInput,
} from "./state/diff.js";
