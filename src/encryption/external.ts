/**
 * Key provider `external`, OpenTofu 1.10's program protocol: the program prints a header line
 * `{"magic":"OpenTofu-External-Key-Provider","version":1}`, reads `null` or the stored
 * `{"external_data":...}`, and prints `{"keys":{"encryption_key":B64,"decryption_key":B64?},
 * "meta":{"external_data":...}}`. Errors never quote the keys or its standard output.
 */
import { ObjstateError } from "../errors.js";
import { nodeChildProcess } from "../util/builtins.js";
import { isObject, jsonOr, type ExternalProviderConfig } from "./config.js";
import { cachedPromise } from "./pbkdf2.js";

export const HEADER_MAGIC = "OpenTofu-External-Key-Provider";
/** OpenTofu's limit for one run. */
export const EXTERNAL_TIMEOUT_MS = 60_000;
/** More than a key answer needs: not a key provider. */
const MAX_OUTPUT_BYTES = 1024 * 1024;
const STDERR_QUOTED = 1000;

interface ExternalKeys {
  readonly encryptionKey: Buffer;
  readonly decryptionKey: Buffer | undefined;
  /** The metadata to store, as Go encodes it: `{"external_data":...}`. */
  readonly meta: Buffer;
}

/** Tests shorten the timeout. */
export interface ExternalOptions {
  readonly timeoutMs?: number;
}

/** JSON with object keys sorted, as Go encodes the `map[string]any` of `external_data`. */
function goJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(goJson).join(",")}]`;
  if (typeof v === "object" && v !== null) {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${goJson(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

/**
 * Run the program once with the stored metadata, or undefined for an encryption key only.
 * @throws ObjstateError `ENCRYPTION_KEY_PROVIDER_FAILED`
 */
function runExternal(config: ExternalProviderConfig, input: Buffer | undefined, opts: ExternalOptions = {}): Promise<ExternalKeys> {
  const program = config.command[0] as string;
  const what = `key provider ${config.address} (program ${program})`;
  const fail = (why: string, stderr = ""): ObjstateError => {
    const err = stderr.trim() === "" ? "" : `; its standard error: ${stderr.trim().slice(0, STDERR_QUOTED)}`;
    return new ObjstateError("ENCRYPTION_KEY_PROVIDER_FAILED", `${what} ${why}${err}`, { details: { keyProvider: config.address, program } });
  };
  const stored = input === undefined ? null : jsonOr(input.toString("utf8"));
  if (stored === undefined)
    return Promise.reject(
      new ObjstateError("ENCRYPTION_TAMPERED", `the metadata stored for ${config.metaKey} is not JSON; it was altered or written by another program`),
    );
  const data = typeof stored === "object" && stored !== null ? (stored as Record<string, unknown>)["external_data"] : undefined;
  const stdinText = data === undefined || data === null ? "null" : goJson({ external_data: data });
  const timeoutMs = opts.timeoutMs ?? EXTERNAL_TIMEOUT_MS;
  return new Promise<ExternalKeys>((resolve, reject) => {
    const done = (e: (Error & { code?: unknown; killed?: boolean; signal?: unknown }) | null, stdout: Buffer, errBytes: Buffer): void => {
      const stderr = errBytes.toString("utf8");
      if (e === null) {
        try {
          resolve(parseAnswer(stdout.toString("utf8"), (why) => fail(why, stderr)));
        } catch (x) {
          reject(x instanceof ObjstateError ? x : fail("gave an answer that could not be read", stderr));
        }
      } else if (e.code === "ENOENT") reject(fail("was not found: check command[0] (a path, or a name on PATH)"));
      else if (e.code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER")
        reject(fail(`printed more than ${MAX_OUTPUT_BYTES} bytes; it does not speak the key provider protocol`, stderr));
      else if (e.killed === true) reject(fail(`did not answer within ${Math.round(timeoutMs / 1000) || timeoutMs / 1000} s and was stopped`, stderr));
      else if (typeof e.code === "number") reject(fail(`exited with code ${e.code}`, stderr));
      else if (typeof e.signal === "string") reject(fail(`was killed by ${e.signal}`, stderr));
      else reject(fail(`could not be run (${String(e.code ?? e.message)})`));
    };
    try {
      const options = { timeout: timeoutMs, killSignal: "SIGKILL" as const, maxBuffer: MAX_OUTPUT_BYTES, encoding: "buffer" as const, shell: false };
      const child = nodeChildProcess().execFile(program, config.command.slice(1), options, done);
      // A program that exits without reading its input must not fail the run by EPIPE.
      child.stdin?.on("error", () => undefined);
      child.stdin?.end(stdinText);
    } catch (e) {
      reject(fail(`could not be started (${(e as Error).message})`));
    }
  });
}

/** Header line, then the output JSON (no unknown fields, as OpenTofu decodes it). */
function parseAnswer(text: string, fail: (why: string) => ObjstateError): ExternalKeys {
  const nl = text.indexOf("\n");
  if (nl === -1) throw fail("did not print the header line first (" + JSON.stringify({ magic: HEADER_MAGIC, version: 1 }) + ")");
  const header = jsonOr(text.slice(0, nl));
  if (header === undefined) throw fail("printed a first line that is not the protocol's JSON header");
  const h = (typeof header === "object" && header !== null ? header : {}) as Record<string, unknown>;
  if (h["magic"] !== HEADER_MAGIC) throw fail(`printed a header without the magic "${HEADER_MAGIC}"`);
  if (h["version"] !== 1) throw fail(`speaks protocol version ${JSON.stringify(h["version"])}; objstate speaks version 1`);
  // Never quote the text: it holds key material.
  const a = jsonOr(text.slice(nl + 1));
  if (a === undefined) throw fail("printed an answer that is not JSON");
  if (!isObject(a)) throw fail("printed an answer that is not a JSON object");
  const only = (o: object, known: readonly string[], at: string, list = ""): void => {
    for (const k of Object.keys(o)) if (!known.includes(k)) throw fail(`printed an unknown field "${at}${k.slice(0, 40)}"${list}`);
  };
  only(a, ["keys", "meta"], "", " (known: keys, meta)");
  const keys = a["keys"] as Record<string, unknown> | undefined;
  if (typeof keys !== "object" || keys === null) throw fail("printed no keys object");
  only(keys, ["encryption_key", "decryption_key"], "keys.");
  const key = (name: string): Buffer | undefined => {
    const v = keys[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(v)) throw fail(`printed keys.${name} that is not base64`);
    return Buffer.from(v, "base64");
  };
  const encryptionKey = key("encryption_key");
  if (encryptionKey === undefined || encryptionKey.length === 0) throw fail("printed no keys.encryption_key");
  const meta = a["meta"];
  if (meta !== undefined && meta !== null && (typeof meta !== "object" || Array.isArray(meta))) throw fail("printed a meta that is not an object");
  const m = (meta ?? {}) as Record<string, unknown>;
  only(m, ["external_data"], "meta.");
  return { encryptionKey, decryptionKey: key("decryption_key"), meta: Buffer.from(goJson({ external_data: m["external_data"] ?? null }), "utf8") };
}

/** One run for the writer's key, one per distinct stored metadata (a wrapped data key opens the same each time). */
export class ExternalProvider {
  readonly #writer = new Map<string, Promise<{ key: Buffer; meta: Buffer }>>();
  readonly #readers = new Map<string, Promise<Buffer | undefined>>();

  constructor(
    readonly config: ExternalProviderConfig,
    private readonly opts: ExternalOptions = {},
  ) {}

  encryptionKey(): Promise<{ key: Buffer; meta: Buffer }> {
    return cachedPromise(this.#writer, "", () => runExternal(this.config, undefined, this.opts).then((k) => ({ key: k.encryptionKey, meta: k.meta })));
  }

  decryptionKey(meta: Buffer | undefined): Promise<Buffer | undefined> {
    if (meta === undefined) return Promise.resolve(undefined);
    return cachedPromise(this.#readers, meta.toString("base64"), () => runExternal(this.config, meta, this.opts).then((k) => k.decryptionKey));
  }
}
