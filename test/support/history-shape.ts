/**
 * Every key of a history entry, in order: the one shape `state history --json` and the
 * server's history route share (`historyEntryJson`). Tests of both compare with it.
 */
export const HISTORY_ENTRY_KEYS: readonly string[] = [
  "versionId",
  "isLatest",
  "deleteMarker",
  "lastModified",
  "size",
  "serial",
  "lineage",
  "writer",
  "who",
  "principal",
  "operation",
  "lockId",
  "sourceVersion",
];
