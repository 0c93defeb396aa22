/** The `objstate` command tree (commander): settings flags come from the tables (settings.ts), errors end as one line and an exit code (io.ts). */
import { Command, CommanderError, Help, Option } from "commander";
import { objstateVersion } from "../version.js";
import type { Opts } from "./options.js";
import type { SettingsCommand } from "../config/settings-table.js";
import { EXIT } from "../error-codes.js";
import { debugEnabled, errorLine, exitCodeOf, isClosedOutput } from "./io.js";
import { addSettingsOptions } from "./settings.js";
import { settingsTopicText } from "../config/settings-docs.js";
import { withToolSpellings } from "./spellings.js";
import { disableColors, paint, printJson, warn } from "./term.js";
import { printable } from "../util/printable.js";

// A command's module loads when that command runs: `--help` and the offline commands do not load the drivers.
const commands = () => import("./commands.js");
const history = () => import("./history.js");
const serving = () => import("./serve.js");

const EXIT_CODES_HELP = `
Exit codes: 0 ok, 1 error, 2 usage or bad input (nothing was written), 3 state locked
by another holder, 4 state does not match its digest (or its last write is torn: run
objstate state repair), 5 state conflict (lineage guard or a concurrent write: nothing
was written), 6 the lock is no longer held by this writer (released or force-unlocked),
7 its lease was lost (LOCK_LOST; nothing more was written);
129 / 130 / 143 interrupted by SIGHUP / SIGINT / SIGTERM, 141 output closed.

Settings that are not fields (timeouts, locks, layout, the server's), with their
--config file keys, variables and the commands that offer them: objstate help settings`;

/** The tool's `-lock=false` is accepted on the writing commands, but objstate takes the lock all the same (docs/decisions/022). */
const LOCK_FALSE_WARNING =
  "-lock=false: objstate takes the workspace's lock for this write all the same (whenever there is a lock table or --lockfile), so that no other writer's write interleaves; to write under a lock you already hold, pass --lock-id ID";

/** Commander's error text (`error: unknown option '--x'\\n(Did you mean --y?)`) as one line. */
function oneLine(text: string): string {
  return text
    .replace(/^error:\s*/i, "")
    .replace(/\s*\n\s*/g, " ")
    .trim();
}

/** The options object of an action's command (the last argument commander passes), typed once here: the flags are the ones this file and the settings table define. */
function optsOf(args: unknown[]): Opts {
  return (args[args.length - 1] as Command).opts() as Opts;
}

/** A subcommand's options with the parent's (serve's own `--users` may be handed to it). */
function allOptsOf(args: unknown[]): Opts {
  return (args[args.length - 1] as Command).optsWithGlobals();
}

function jsonOption(cmd: Command, what = "print the result as JSON"): Command {
  return cmd.option("--json", what);
}

/** `--json`, `--lock-id` and `--lock` of the commands that write under the workspace's lock. */
function writeOptions(cmd: Command): Command {
  return jsonOption(cmd)
    .option("--lock-id <id>", "write under this lock, which you hold (the ID printed by objstate lock); it stays held: release it with objstate unlock")
    .addOption(
      new Option(
        "--lock <bool>",
        "the tool's -lock=false is accepted, but objstate writes under the workspace's lock all the same (with a lock table or --lockfile)",
      ).choices(["true", "false"]),
    );
}

function roleOption(cmd: Command, what: string): Command {
  return cmd.option("--role <glob=roles>", what, (v: string, prev: string[] | undefined) => [...(prev ?? []), v]);
}

/** What `objstate version`, `-v` and `--version` print: objstate's version, then the Node.js and platform it runs on. */
function versionText(): string {
  return `objstate v${objstateVersion()}\non Node.js ${process.version} (${process.platform} ${process.arch})`;
}

/** `--no-color` on every command (the program's own is only for words before the command). */
function noColorOption(cmd: Command): Command {
  return cmd.option(
    "--no-color",
    "no colours in the output, whatever FORCE_COLOR says (without it: colours on a terminal unless NO_COLOR is set, and anywhere FORCE_COLOR=1)",
  );
}

/** A leaf's settings flags (added later: see {@link program}) and its action, given its options and positional arguments. */
type Leaf = (
  cmd: Command,
  command: SettingsCommand,
  options: Parameters<typeof addSettingsOptions>[2],
  run: (opts: Opts, args: unknown[]) => Promise<void> | void,
) => void;

/** The program itself: its options, help and error output. */
function rootCommand(pending: ReadonlyMap<Command, () => void>): Command {
  const root = new Command("objstate")
    .description("Keep an infrastructure tool's state in an object-storage bucket, with locking in a key-value table.")
    .version(versionText(), "-v, --version", "print objstate's version and the Node.js and platform it runs on (as objstate version)")
    // The program's own options only before a subcommand: `state pull --version ID` is the subcommand's.
    .enablePositionalOptions()
    .helpOption("-h, --help", "show help for a command")
    .showSuggestionAfterError(true)
    .configureHelp({
      // A command whose settings flags are still to be added has options all the same.
      subcommandTerm(cmd: Command): string {
        const term = Help.prototype.subcommandTerm.call(this, cmd);
        return pending.has(cmd) && cmd.options.length === 0 ? `${cmd.name()} [options]${term.slice(cmd.name().length)}` : term;
      },
    })
    .exitOverride()
    .configureOutput({
      outputError: (str, write) => write(`${paint(process.stderr).red("objstate: error:")} ${oneLine(str)}\n`),
    })
    .addHelpText("after", EXIT_CODES_HELP);
  noColorOption(root);
  // Settings made above (exitOverride, output, suggestions) are copied to subcommands when they are created.
  root.hook("preAction", (_root, action) => {
    if ((action.opts() as Opts).lock === "false") warn(LOCK_FALSE_WARNING);
  });
  return root;
}

/** `version`, `synth`, `config` and `workspace …`. */
function basicCommands(root: Command, leaf: Leaf): void {
  root
    .command("version")
    .description("print objstate's version and the Node.js and platform it runs on (the same as objstate --version)")
    .option("--json", 'print {"version", "node", "platform", "arch"}')
    .action((...args: unknown[]) => {
      if (optsOf(args).json === true) printJson({ version: objstateVersion(), node: process.versions.node, platform: process.platform, arch: process.arch });
      else process.stdout.write(`${versionText()}\n`);
    });

  const synth = root
    .command("synth")
    .description(
      'print the tool JSON: of a props file ({"backend": {...}, "remoteStates": {"NAME": {...}}}), or, without one, of the backend given by --config and flags; with --for, the real tool\'s own backend configuration',
    )
    .argument("[file]", "props file (JSON), or - for standard input")
    .addOption(
      new Option(
        "--for <backend>",
        "write the configuration of the tool's own backend, which Terraform and OpenTofu read unchanged: s3 or oss (this bucket and table), http (objstate serve, which holds the store settings)",
      ).choices(["s3", "oss", "http"]),
    )
    .option("--serve-url <url>", "with --for http: the URL the tool reaches objstate serve by, such as http://127.0.0.1:8080")
    .option("--username <name>", "with --for http: the user the tool logs in as (the password is never written: set TF_HTTP_PASSWORD)");
  leaf(synth, "synth", { workspace: true }, async (o, [file]) => (await commands()).synthAction(file as string | undefined, o));

  const config = root.command("config").description("show the effective settings, where each came from, and the credentials source (secrets redacted)");
  leaf(jsonOption(config), "config", { workspace: true }, async (o) => (await commands()).configAction(o));

  const workspace = root.command("workspace").description("list, create and delete workspaces");
  const list = workspace.command("list").description("list the workspaces that have a state (default first); * marks the selected one");
  leaf(jsonOption(list), "workspace list", { workspace: true }, async (o) => (await commands()).workspaceListAction(o));
  const create = workspace.command("new").description("create a workspace with an empty state; refuses one that exists").argument("<name>", "workspace name");
  leaf(writeOptions(create), "workspace new", {}, async (o, [name]) => (await commands()).workspaceNewAction(name as string, o));
  const remove = workspace.command("delete").description("delete a workspace's state and digest; refuses default").argument("<name>", "workspace name");
  leaf(writeOptions(remove), "workspace delete", {}, async (o, [name]) => (await commands()).workspaceDeleteAction(name as string, o));
}

function stateCommands(root: Command, leaf: Leaf): void {
  const state = root.command("state").description("read and write a workspace's state");
  const pull = state
    .command("pull")
    .description("print the stored state, byte for byte, on standard output")
    // The subcommand's own --version (an ID from state history) wins over the program's.
    .option("--version <id>", "print this version (an ID from objstate state history) instead of the current one; needs no lock table")
    .addOption(new Option("--version-id <id>", "the same as --version").hideHelp())
    .option("--raw-envelope", "with encryption configured: print the stored envelope instead of the decrypted state");
  leaf(pull, "state pull", { workspace: true }, async (o) => (await commands()).statePullAction(o));
  const list = state
    .command("history")
    .description(
      "list the versions of a workspace's state, newest first: ID, time, size, serial, lineage, and who wrote it with which operation (needs bucket versioning)",
    )
    .option("--limit <n>", "list at most this many versions (the newest)");
  leaf(jsonOption(list), "state history", { workspace: true }, async (o) => (await history()).stateHistoryAction(o));
  const diff = state
    .command("diff")
    .description(
      "show resources and outputs added, removed and changed between two versions (default: the previous version against the current one); sensitive values show as <sensitive>; exit 0 either way",
    )
    .option("--from <id>", "the older side: a version ID from objstate state history [default: the version before --to]")
    .option("--to <id>", "the newer side: a version ID [default: the current version]");
  leaf(jsonOption(diff), "state diff", { workspace: true }, async (o) => (await history()).stateDiffAction(o));
  const rollback = state
    .command("rollback")
    .description(
      "under the lock, write an old version's content as a new version with serial = current + 1 (same lineage), so the tool takes it as newer; deletes nothing, restores a deleted workspace; shows the diff and asks first unless --yes",
    )
    .requiredOption("--to <id>", "the version to roll back to (an ID from objstate state history)")
    .option("--yes", "do not show the diff and ask for confirmation (required when standard input is not a terminal)")
    .option("--force", "roll back to a version of another lineage than the current state's");
  leaf(writeOptions(rollback), "state rollback", { workspace: true }, async (o) => (await history()).stateRollbackAction(o));
  const push = state
    .command("push")
    .description(
      "store a state under the workspace's lock, guarded like the tool's own state push: another lineage, a lower serial or the same serial with other content is refused (exit 5); the same content again writes nothing",
    )
    .argument("<file>", "state file, or - for standard input")
    .option("--force", "write even when the lineage guard refuses (the lock and the version read are still checked)");
  leaf(writeOptions(push), "state push", { workspace: true }, async (o, [file]) => (await commands()).statePushAction(file as string, o));
  const repair = state
    .command("repair")
    .description(
      "under the lock: commit a write that was stored but never committed (torn write), write the committed state again over a late write that never committed, remove a digest left without a state, and remove leftovers of dead writers",
    )
    .option("--force", "record the digest of whatever is stored, even when it does not prove a complete objstate write")
    .option("--older-than <duration>", "remove leftovers at least this old; younger ones may belong to a writer still at work [default: 1h]");
  leaf(writeOptions(repair), "state repair", { workspace: true }, async (o) => (await commands()).stateRepairAction(o));
  const rekey = state
    .command("rekey")
    .description(
      "under the lock, write the current state again under the primary encryption method (the encryption setting or TF_ENCRYPTION) as a new version with serial + 1: after a key rotation, or to migrate in or out; old versions stay readable through the fallback",
    )
    .option("--all", "rekey every workspace");
  leaf(jsonOption(rekey), "state rekey", { workspace: true }, async (o) => (await commands()).stateRekeyAction(o));
}

/** `lock`, `locks`, `unlock`, `force-unlock` and `output`. */
function lockAndOutputCommands(root: Command, leaf: Leaf): void {
  const lock = root
    .command("lock")
    .description(
      "take the workspace's lock and print its ID (release it with objstate unlock ID); with -- COMMAND, hold it while the command runs (renewing a --lock-ttl lease; the command gets OBJSTATE_LOCK_ID) and release it after",
    )
    .argument(
      "[command...]",
      "command to run under the lock (after --); objstate exits 0 when it succeeds, 8 when it fails (naming its code), or 7 when the lease was lost",
    )
    .option("--operation <op>", "what the holder is doing, shown to others [default: objstate lock]")
    .option("--info <text>", "free text stored with the lock");
  leaf(jsonOption(lock, "print the whole lock info as JSON"), "lock", { workspace: true }, async (o, [command]) =>
    (await commands()).lockAction(o, command as string[]),
  );
  const locks = root
    .command("locks")
    .description("list every lock held in the lock table and every lockfile under the prefix: workspace, ID, who, operation, since, lease expiry");
  leaf(jsonOption(locks), "locks", {}, async (o) => (await commands()).locksAction(o));
  const unlock = root.command("unlock").description("release the lock with this ID").argument("<id>", "the lock ID printed by objstate lock");
  leaf(jsonOption(unlock), "unlock", { workspace: true }, async (o, [id]) => (await commands()).unlockAction(id as string, o));
  const forceUnlock = root
    .command("force-unlock")
    .description("release someone else's lock, given the ID shown in the lock error; asks first unless --force")
    .argument("<id>", "the ID of the lock to release")
    .option("-f, --force", "do not ask for confirmation (required when standard input is not a terminal)");
  leaf(jsonOption(forceUnlock), "force-unlock", { workspace: true }, async (o, [id]) => (await commands()).unlockAction(id as string, o, true));

  const output = root
    .command("output")
    .description("print the outputs of a workspace's state, over --defaults (all of them, or one by name)")
    .argument("[name]", "one output")
    .option("--json", "print JSON (numbers exactly as in the state)")
    .addOption(
      new Option("--raw", "print one string, number or boolean output as is: no quotes, no trailing newline, numbers in plain decimal (needs NAME)").conflicts(
        "json",
      ),
    )
    .option("--show-sensitive", "show the values of sensitive outputs in the listing of all outputs (one asked for by NAME is always shown)");
  leaf(output, "output", { workspace: true, defaults: true }, async (o, [name]) => (await import("./output.js")).outputAction(name as string | undefined, o));
}

function adminCommands(root: Command, leaf: Leaf): void {
  const doctor = root.command("doctor").description("check each link in order: settings, credentials, endpoints, bucket, lock table, digest");
  leaf(jsonOption(doctor), "doctor", { workspace: true }, async (o) => (await import("./admin.js")).doctorAction(o));
  const init = root
    .command("init")
    .description("report whether the bucket and lock table exist, and create what is missing when asked")
    .option("--create-bucket", "create the bucket if it does not exist")
    .option("--create-table", "create the lock table (key LockID, String) if it does not exist")
    .option(
      "--versioning",
      "turn on bucket versioning: every write keeps the version it replaces (what state history and rollback need); the embedded store always keeps versions",
    )
    .option(
      "--keep-days <n>",
      "with --versioning: let noncurrent versions expire this many days after they were replaced (a lifecycle rule; nothing expires without one)",
    )
    .option(
      "--keep-versions <n>",
      "with --versioning: keep at least this many newest noncurrent versions of each state (S3 NewerNoncurrentVersions; Ceph RGW does not support it, and objstate then sets nothing)",
    );
  leaf(jsonOption(init), "init", {}, async (o) => (await import("./admin.js")).initAction(o));
}

/** `serve` and its `hash-password` and `token …`. */
function serveCommands(root: Command, leaf: Leaf): void {
  const serve = root
    .command("serve")
    .description(
      "serve the state over the tool's http backend protocol (/state/{workspace}, LOCK/UNLOCK), a JSON API (/api/v1), /healthz, /readyz and /metrics; runs until SIGTERM or SIGINT, then finishes requests in flight",
    );
  leaf(serve, "serve", {}, async (o) => (await serving()).serveAction(o));
  const hashPassword = serve
    .command("hash-password")
    .description("add a user (scrypt-hashed password read from standard input) with roles to a users file, or print the entry")
    .requiredOption("--user <name>", "user name (the http backend's username)");
  roleOption(hashPassword, "roles on workspaces matching GLOB: outputs, read, write, lock, force, admin (repeatable) [default: *=read]")
    .option(
      "--users <file>",
      "users file to add the user to (created with mode 600 when absent, made 600 when its group or others may read it); without it the entry is printed",
    )
    .action(async (...args: unknown[]) => (await serving()).hashPasswordAction(allOptsOf(args)));
  const token = serve.command("token").description("API tokens for CI (Basic password or Authorization: Bearer), kept hashed beside the users file");
  const tokensFile = "users file whose tokens these are (the tokens live in FILE.tokens.json beside it, mode 600)";
  const create = token
    .command("create")
    .description("make a token for a user of the users file and print it once (only its SHA-256 is stored)")
    .requiredOption("--user <name>", "the user the token acts as")
    .option("--ttl <duration>", "how long the token is valid (e.g. 12h, 30d) [default: 30d]");
  roleOption(create, "the token's own roles on workspaces matching GLOB instead of the user's (repeatable) [default: the user's roles]")
    .requiredOption("--users <file>", tokensFile)
    .action(async (...args: unknown[]) => (await serving()).tokenCreateAction(allOptsOf(args)));
  token
    .command("list")
    .description("list the tokens: ID, user, state, roles, created, expires, last used (never the tokens)")
    .requiredOption("--users <file>", tokensFile)
    .action(async (...args: unknown[]) => (await serving()).tokenListAction(allOptsOf(args)));
  token
    .command("revoke")
    .description("revoke a token by its ID: the next request with it is refused (401)")
    .argument("<id>", "the token's ID (token list shows them)")
    .requiredOption("--users <file>", tokensFile)
    .action(async (...args: unknown[]) => (await serving()).tokenRevokeAction(args[0] as string, allOptsOf(args)));
}

/**
 * The command tree. Only the command `argv` names gets its settings flags now (commander adds each in
 * time linear in those before it); another gets them when dispatched to. Without `argv`, every command has them.
 */
export function program(argv?: readonly string[]): Command {
  const pending = new Map<Command, () => void>();
  const leaf: Leaf = (cmd, command, options, run) => {
    pending.set(cmd, () => addSettingsOptions(cmd, command, options));
    cmd.action((...args: unknown[]) => run(optsOf(args), args));
  };
  const root = rootCommand(pending);
  for (const add of [basicCommands, stateCommands, lockAndOutputCommands, adminCommands, serveCommands]) add(root, leaf);
  const completed = new Set<Command>();
  const complete = (cmd: Command): void => {
    if (completed.has(cmd)) return;
    completed.add(cmd);
    pending.get(cmd)?.();
    pending.delete(cmd);
    noColorOption(cmd);
  };
  const leaves: Command[] = [];
  const visit = (cmd: Command): void => {
    cmd.hook("preSubcommand", (_cmd, sub) => complete(sub));
    for (const sub of cmd.commands) {
      if (sub.commands.length > 0) visit(sub);
      // A command with subcommands may run too (serve): it completes like a leaf.
      if (sub.commands.length === 0 || pending.has(sub)) leaves.push(sub);
    }
  };
  visit(root);
  if (argv === undefined) leaves.forEach(complete);
  else {
    const { cmd } = commandPath(root, argv.slice(2));
    if (cmd !== root) complete(cmd);
  }
  return root;
}

/** The command the words of `args` name (`state push`, `help state push`), or the last one named (serve; the program), and the index after its path. */
function commandPath(root: Command, args: readonly string[]): { cmd: Command; next: number } {
  let cur = root;
  let next = 0;
  for (let i = 0; i < args.length; i++) {
    const word = args[i] as string;
    if (word.startsWith("-") || word === "help") continue;
    const sub = cur.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (sub === undefined) break;
    cur = sub;
    next = i + 1;
    if (sub.commands.length === 0) break;
  }
  return { cmd: cur, next };
}

/**
 * `argv` as commander is to read it: the tool's spellings in `--` form (spellings.ts), the hidden `-V` as
 * `--version`. `--no-color` takes effect here, so that even commander's own errors have no colours.
 */
function prepareArgv(root: Command, argv: readonly string[]): string[] {
  const args = argv.slice(2);
  const { cmd, next } = commandPath(root, args);
  // Before the command (or without one), only the program's options: none takes a value.
  const own = args.slice(0, cmd === root ? args.length : next).map((w) => (w === "-V" ? "--version" : w));
  const after = cmd === root ? { args: [], noColor: false } : withToolSpellings(cmd, args.slice(next));
  if (own.includes("--no-color") || after.noColor) disableColors();
  return [...argv.slice(0, 2), ...own, ...after.args];
}

/** Print an error as one line on stderr (`objstate: error: …`); with OBJSTATE_DEBUG, the stack of anything unexpected follows. */
export function reportError(e: unknown): void {
  // Messages quote what locks and states hold (a holder's Who, a workspace name): escaped.
  process.stderr.write(`${paint(process.stderr).red("objstate: error:")} ${printable(errorLine(e))}\n`);
  if (debugEnabled() && e instanceof Error && e.stack !== undefined) process.stderr.write(`${e.stack}\n`);
}

/** `objstate help settings` (or `objstate settings --help`): the help topic of the settings table. */
function isSettingsTopic(args: readonly string[]): boolean {
  const words = args.filter((w) => w !== "--no-color");
  return words.length === 2 && ((words[0] === "help" && words[1] === "settings") || (words[0] === "settings" && (words[1] === "--help" || words[1] === "-h")));
}

/** Run the CLI on `argv`; returns the exit code. */
export async function run(argv: string[]): Promise<number> {
  try {
    if (isSettingsTopic(argv.slice(2))) {
      process.stdout.write(settingsTopicText());
      return EXIT.ok;
    }
    const root = program(argv);
    await root.parseAsync(prepareArgv(root, argv));
    return EXIT.ok;
  } catch (e) {
    // commander already printed the message (and help / version on request)
    if (e instanceof CommanderError) return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    // The reader of our output is gone (`| head`): nothing to say, and no one to say it to.
    if (isClosedOutput(e)) return EXIT.outputClosed;
    reportError(e);
    return exitCodeOf(e);
  }
}
