/**
 * `objstate/state`: `diffStates` and its text form, a subpath of its own so that importing the
 * package does not load the state parsers and comparers.
 * @packageDocumentation
 */
/// <reference types="node" preserve="true" />
export * from "./state/diff.js";
