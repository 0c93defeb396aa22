/**
 * The `objstate` command tree (commander). Every command has `--help`; settings flags are
 * generated from the field table (settings.ts); errors end in main with one line on
 * stderr and a documented exit code (io.ts).
 */
import { Command, CommanderError, Option } from "commander";
import { objstateVersion } from "../version.js";
import {
  configAction,
  forceUnlockAction,
  lockAction,
  locksAction,
  statePullAction,
  statePushAction,
  stateRepairAction,
  synthAction,
  unlockAction,
  workspaceDeleteAction,
  workspaceListAction,
  workspaceNewAction,
  type Opts,
} from "./commands.js";
import { doctorAction } from "./doctor.js";
import { durationFlag } from "./duration.js";
import { initAction } from "./init.js";
import { debugEnabled, errorLine, EXIT, exitCodeOf, isClosedOutput } from "./io.js";
import { outputAction } from "./output.js";
import { setRequestTimeout } from "./runtime.js";
import { addSettingsOptions } from "./settings.js";
import { paint } from "./term.js";

const EXIT_CODES_HELP = `
Exit codes: 0 ok, 1 error, 2 usage or bad input (nothing was written), 3 state locked
by another holder, 4 state does not match its digest (or its last write is torn: run
objstate state repair), 5 state conflict (lineage guard or a concurrent write: nothing
was written), 6 the lock is no longer held by this writer: released, or its lease lost
(LOCK_LOST; nothing more was written);
129 / 130 / 143 interrupted by SIGHUP / SIGINT / SIGTERM, 141 output closed.`;

/** Commander's error text (`error: unknown option '--x'\\n(Did you mean --y?)`) as one line. */
function oneLine(text: string): string {
  return text
    .replace(/^error:\s*/i, "")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .join(" ");
}

/** The options object of an action's command (the last argument commander passes). */
function optsOf(args: unknown[]): Opts {
  return (args[args.length - 1] as Command).opts();
}

function jsonOption(cmd: Command, what = "print the result as JSON"): Command {
  return cmd.option("--json", what);
}

function lockTimeoutOption(cmd: Command): Command {
  return cmd.addOption(new Option("--lock-timeout <duration>", "while another holder has the lock, retry (with backoff) for up to this long: 0s, 30s, 5m, 1h30m [default: 0s, fail at once]"));
}

function lockIdOption(cmd: Command): Command {
  return cmd.addOption(new Option("--lock-id <id>", "write under this lock, which you hold (the ID printed by objstate lock); it stays held: release it with objstate unlock"));
}

/**
 * `--timeout`: not a setting of the seed's config (nothing to synthesize), so it sits
 * here beside `--lock-timeout`, on every command that talks to a server.
 */
function timeoutOption(cmd: Command): Command {
  return cmd.addOption(
    new Option(
      "--timeout <duration>",
      "give up on a request to the object store, lock table or STS after this long, retries included (one more second per MiB of a large body): 30s, 2m [default: 60s; connect 5s and idle 20s per attempt]",
    ),
  );
}

/**
 * `--lock-ttl` and `--lockfile`: objstate's own lock settings (not fields of the seed's
 * config; also in the --config file's `objstate` section), on every command that talks to a server.
 */
function lockSettingsOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option("--lock-ttl <duration>", "locks this command takes expire unless renewed (objstate renews them every third of this while it works; an expired one is taken over): 30s, 1m [default: none, never expire]"))
    .addOption(new Option("--lockfile", "lock with a lockfile {state path}.tflock in the bucket (as the tool's S3 backend does), with or without a lock table"));
}

/** Commands that never contact a server. */
const OFFLINE = new Set(["synth", "config"]);

export function program(): Command {
  const root = new Command("objstate")
    .description("Keep an infrastructure tool's state in an object-storage bucket, with locking in a key-value table.")
    .version(objstateVersion(), "-V, --version", "print the version")
    .helpOption("-h, --help", "show help for a command")
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      outputError: (str, write) => write(`${paint(process.stderr).red("objstate: error:")} ${oneLine(str)}\n`),
    })
    .addHelpText("after", EXIT_CODES_HELP);
  // Settings made above (exitOverride, output, suggestions) are copied to subcommands when they are created.
  root.hook("preAction", (_root, action) => {
    const t = action.opts()["timeout"];
    setRequestTimeout(typeof t === "string" ? durationFlag("--timeout", t) : undefined);
  });

  const synth = root
    .command("synth")
    .description('print the tool JSON: of a props file ({"backend": {...}, "remoteStates": {"NAME": {...}}}), or, without one, of the backend given by --config and flags')
    .argument("[file]", "props file (JSON), or - for standard input");
  addSettingsOptions(synth).action((file: string | undefined, ...rest: unknown[]) => synthAction(file, optsOf(rest)));

  const config = jsonOption(root.command("config").description("show the effective settings, where each came from, and the credentials source (secrets redacted)"));
  addSettingsOptions(config, { workspace: true }).action((...args: unknown[]) => configAction(optsOf(args)));

  const workspace = root.command("workspace").description("list, create and delete workspaces");
  const wsList = jsonOption(workspace.command("list").description("list the workspaces that have a state (default first); * marks the selected one"));
  addSettingsOptions(wsList, { workspace: true }).action((...args: unknown[]) => workspaceListAction(optsOf(args)));
  const wsNew = lockIdOption(lockTimeoutOption(jsonOption(workspace.command("new").description("create a workspace with an empty state; refuses one that exists").argument("<name>", "workspace name"))));
  addSettingsOptions(wsNew).action((name: string, ...rest: unknown[]) => workspaceNewAction(name, optsOf(rest)));
  const wsDelete = lockIdOption(lockTimeoutOption(jsonOption(workspace.command("delete").description("delete a workspace's state and digest; refuses default").argument("<name>", "workspace name"))));
  addSettingsOptions(wsDelete).action((name: string, ...rest: unknown[]) => workspaceDeleteAction(name, optsOf(rest)));

  const state = root.command("state").description("read and write a workspace's state");
  const pull = state.command("pull").description("print the stored state, byte for byte, on standard output");
  addSettingsOptions(pull, { workspace: true }).action((...args: unknown[]) => statePullAction(optsOf(args)));
  const push = lockIdOption(
    lockTimeoutOption(
      jsonOption(
        state
          .command("push")
          .description("store a state under the workspace's lock, guarded like the tool's own state push: another lineage, a lower serial or the same serial with other content is refused (exit 5); the same content again writes nothing")
          .argument("<file>", "state file, or - for standard input")
          .option("--force", "write even when the lineage guard refuses (the lock and the version read are still checked)"),
      ),
    ),
  );
  addSettingsOptions(push, { workspace: true }).action((file: string, ...rest: unknown[]) => statePushAction(file, optsOf(rest)));
  const repair = lockIdOption(
    lockTimeoutOption(
      jsonOption(
        state
          .command("repair")
          .description("under the lock: record the digest of a write that did not finish recording it (torn write), remove a digest left without a state, and remove leftovers of dead writers")
          .option("--force", "record the digest of whatever is stored, even when it does not prove a complete objstate write")
          .addOption(new Option("--older-than <duration>", "remove leftovers at least this old; younger ones may belong to a writer still at work [default: 1h]")),
      ),
    ),
  );
  addSettingsOptions(repair, { workspace: true }).action((...args: unknown[]) => stateRepairAction(optsOf(args)));

  const lock = lockTimeoutOption(
    jsonOption(
      root
        .command("lock")
        .description(
          "take the workspace's lock and print its ID (release it with objstate unlock ID); with -- COMMAND, hold it while the command runs (renewing a --lock-ttl lease; the command gets OBJSTATE_LOCK_ID) and release it after",
        )
        .argument("[command...]", "command to run under the lock (after --); objstate exits with its exit code, or 6 when the lease was lost")
        .option("--operation <op>", "what the holder is doing, shown to others", "objstate lock")
        .option("--info <text>", "free text stored with the lock"),
      "print the whole lock info as JSON",
    ),
  );
  addSettingsOptions(lock, { workspace: true }).action((command: string[], ...rest: unknown[]) => lockAction(optsOf(rest), command));

  const locks = jsonOption(root.command("locks").description("list every lock held in the lock table and every lockfile under the prefix: workspace, ID, who, operation, since, lease expiry"));
  addSettingsOptions(locks).action((...args: unknown[]) => locksAction(optsOf(args)));

  const unlock = jsonOption(root.command("unlock").description("release the lock with this ID").argument("<id>", "the lock ID printed by objstate lock"));
  addSettingsOptions(unlock, { workspace: true }).action((id: string, ...rest: unknown[]) => unlockAction(id, optsOf(rest)));

  const forceUnlock = jsonOption(
    root
      .command("force-unlock")
      .description("release someone else's lock, given the ID shown in the lock error; asks first unless --force")
      .argument("<id>", "the ID of the lock to release")
      .option("-f, --force", "do not ask for confirmation (required when standard input is not a terminal)"),
  );
  addSettingsOptions(forceUnlock, { workspace: true }).action((id: string, ...rest: unknown[]) => forceUnlockAction(id, optsOf(rest)));

  const output = root
    .command("output")
    .description("print the outputs of a workspace's state, over --defaults (all of them, or one by name)")
    .argument("[name]", "one output")
    .option("--json", "print JSON (numbers exactly as in the state)")
    .addOption(
      new Option("--raw", "print one string, number or boolean output as is: no quotes, no trailing newline, numbers in plain decimal (needs NAME)").conflicts("json"),
    )
    .option("--show-sensitive", "show the values of sensitive outputs in the listing of all outputs (one asked for by NAME is always shown)");
  addSettingsOptions(output, { workspace: true, defaults: true }).action((name: string | undefined, ...rest: unknown[]) => outputAction(name, optsOf(rest)));

  const doctor = jsonOption(root.command("doctor").description("check each link in order: settings, credentials, endpoints, bucket, lock table, digest"));
  addSettingsOptions(doctor, { workspace: true }).action((...args: unknown[]) => doctorAction(optsOf(args)));

  const init = jsonOption(
    root
      .command("init")
      .description("report whether the bucket and lock table exist, and create what is missing when asked")
      .option("--create-bucket", "create the bucket if it does not exist")
      .option("--create-table", "create the lock table (key LockID, String) if it does not exist"),
  );
  addSettingsOptions(init).action((...args: unknown[]) => initAction(optsOf(args)));

  const visit = (cmd: Command): void => {
    for (const sub of cmd.commands) {
      if (sub.commands.length > 0) visit(sub);
      else if (!OFFLINE.has(sub.name())) lockSettingsOptions(timeoutOption(sub));
    }
  };
  visit(root);
  return root;
}

/**
 * Print an error as one line on stderr (`objstate: error: …`); with OBJSTATE_DEBUG, the
 * stack of anything unexpected follows.
 */
export function reportError(e: unknown): void {
  process.stderr.write(`${paint(process.stderr).red("objstate: error:")} ${errorLine(e)}\n`);
  if (debugEnabled() && e instanceof Error && e.stack !== undefined) process.stderr.write(`${e.stack}\n`);
}

/** Run the CLI on `argv`; returns the exit code. */
export async function run(argv: string[]): Promise<number> {
  try {
    await program().parseAsync(argv);
    return EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander already printed the message (and help / version on request)
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    // The reader of our output is gone (`| head`): nothing to say, and no one to say it to.
    if (isClosedOutput(e)) return EXIT.outputClosed;
    reportError(e);
    return exitCodeOf(e);
  }
}
