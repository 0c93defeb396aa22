/**
 * The tool's lock `Operation` values as people say them. Terraform and OpenTofu write the
 * Go name of their run type (`OperationTypeApply`; backendrun/operation_type.go) for plan,
 * apply and refresh, and a command's name for the rest (`state-mv`, `taint`). Pure.
 */

/** The run types (`OperationTypeInvalid` is the one of import and console, which name none). */
const RUN_TYPES: Readonly<Record<string, string>> = {
  OperationTypeApply: "apply",
  OperationTypePlan: "plan",
  OperationTypeRefresh: "refresh",
  OperationTypeInvalid: "import or console",
};

/**
 * `apply` for `OperationTypeApply`, `state mv` for `state-mv`; any other text as it is
 * (objstate's own operations are already words).
 */
export function operationName(operation: string): string {
  if (Object.hasOwn(RUN_TYPES, operation)) return RUN_TYPES[operation] as string;
  const command = /^(state|workspace)-([a-z-]+)$/.exec(operation);
  return command === null ? operation : `${command[1] as string} ${command[2] as string}`;
}
