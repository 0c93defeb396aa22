/**
 * Key provider `pbkdf2` in OpenTofu's form: PBKDF2-HMAC of the passphrase with a random salt, the
 * parameters stored in the envelope's `meta`. Derived on the thread pool (a server keeps answering), cached.
 */
import { promisify } from "node:util";
import { ObjstateError } from "../errors.js";
import { nodeCrypto } from "../util/builtins.js";
import { KEY_LENGTHS } from "./aes-gcm.js";
import { isObject, jsonOr, MIN_ITERATIONS, type Pbkdf2ProviderConfig } from "./config.js";
import { remember } from "../util/memo.js";

/** The metadata OpenTofu stores for pbkdf2 (Go field order). */
export interface Pbkdf2Meta {
  readonly salt: Buffer;
  readonly iterations: number;
  readonly hashFunction: "sha256" | "sha512";
  readonly keyLength: number;
}

/** Stored iterations beyond this multiple of the configured ones are refused unrun: a client's envelope must not make a reader spin. */
const ITERATIONS_FACTOR = 4;
/** Derivations at once: half of libuv's pool (4 threads by default), which also does the file I/O. */
const MAX_DERIVATIONS = Math.max(1, Math.floor((Number(process.env["UV_THREADPOOL_SIZE"]) || 4) / 2));

/** As OpenTofu's Go code writes it. */
function encodePbkdf2Meta(m: Pbkdf2Meta): Buffer {
  return Buffer.from(
    `{"salt":"${m.salt.toString("base64")}","iterations":${m.iterations},"hash_function":${JSON.stringify(m.hashFunction)},"key_length":${m.keyLength}}`,
    "utf8",
  );
}

/**
 * The stored metadata, or undefined when absent or incomplete (OpenTofu's `isPresent`: no key then).
 * @throws ObjstateError `ENCRYPTION_TAMPERED` for metadata not of the pbkdf2 shape
 */
function decodePbkdf2Meta(json: Buffer | undefined, describe: string): Pbkdf2Meta | undefined {
  if (json === undefined) return undefined;
  const bad = (why: string): never => {
    throw new ObjstateError("ENCRYPTION_TAMPERED", `${describe}: its pbkdf2 metadata ${why}; it was altered or written by another program`);
  };
  const o = jsonOr(json.toString("utf8"));
  if (!isObject(o)) return bad(o === undefined ? "is not JSON" : "is not an object");
  const count = (name: string, what: string): number => {
    const n = o[name] ?? 0;
    return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : bad(`has an invalid ${what} (${String(n)})`);
  };
  const stored = o["salt"] ?? "";
  const salt = typeof stored === "string" ? Buffer.from(stored, "base64") : bad("has a salt that is not base64");
  const iterations = count("iterations", "number of iterations");
  const keyLength = count("key_length", "key length");
  const hash = o["hash_function"] ?? "";
  if (hash !== "" && hash !== "sha256" && hash !== "sha512") return bad(`names an unknown hash function (${JSON.stringify(hash)})`);
  if (salt.length === 0 || iterations === 0 || hash === "" || keyLength === 0) return undefined;
  return { salt, iterations, hashFunction: hash as "sha256" | "sha512", keyLength };
}

/** Derived keys by a digest of (passphrase, salt, parameters), never by the passphrase itself. */
const cache = new Map<string, Promise<Buffer>>();
const CACHE_ENTRIES = 256;
let derivations = 0;

/** Derivations run (not from the cache), for tests and benches. */
export function pbkdf2Derivations(): number {
  return derivations;
}

/** PBKDF2 of `passphrase` with `m`'s salt and parameters, once per process for the same inputs. */
export function derivePbkdf2(passphrase: Buffer, m: Pbkdf2Meta): Promise<Buffer> {
  const crypto = nodeCrypto();
  const id = crypto
    .createHash("sha256")
    .update(`${m.hashFunction}\0${m.iterations}\0${m.keyLength}\0${m.salt.length}\0`)
    .update(m.salt)
    .update(passphrase)
    .digest("base64");
  return cachedPromise(cache, id, () => {
    derivations++;
    return inSlot(() => promisify(crypto.pbkdf2)(passphrase, m.salt, m.iterations, m.keyLength, m.hashFunction));
  });
}

/** `cache`'s promise for `id`, else `make`'s, kept unless it fails; the least recently used goes past `limit`. */
export function cachedPromise<T>(cache: Map<string, Promise<T>>, id: string, make: () => Promise<T>, limit = CACHE_ENTRIES): Promise<T> {
  let p = cache.get(id);
  if (p === undefined) {
    p = make();
    p.catch(() => cache.delete(id));
  }
  remember(cache, id, p, limit);
  return p;
}

let running = 0;
const waiting: (() => void)[] = [];

/** `run` in one of {@link MAX_DERIVATIONS} places; a place freed goes straight to the next waiter. */
async function inSlot<T>(run: () => Promise<T>): Promise<T> {
  if (running < MAX_DERIVATIONS) running++;
  else await new Promise<void>((r) => waiting.push(r));
  try {
    return await run();
  } finally {
    const next = waiting.shift();
    if (next === undefined) running--;
    else next();
  }
}

/** @throws ObjstateError `ENCRYPTION_KDF_OUT_OF_BOUNDS` for stored parameters this configuration would not write, before deriving. */
function checkBounds(m: Pbkdf2Meta, c: Pbkdf2ProviderConfig, describe: string): void {
  const max = ITERATIONS_FACTOR * c.iterations;
  const refuse = (parameter: string, why: string, bound: Record<string, number>): never => {
    throw new ObjstateError("ENCRYPTION_KDF_OUT_OF_BOUNDS", `${describe}: its pbkdf2 metadata for ${c.address} ${why}; nothing was derived`, {
      details: { parameter, ...bound },
    });
  };
  if (!KEY_LENGTHS.includes(m.keyLength))
    refuse("key_length", `asks for a ${m.keyLength}-byte key, and AES-GCM takes only 16, 24 or 32 bytes: it was altered or written for another method`, {
      value: m.keyLength,
    });
  if (m.iterations < MIN_ITERATIONS || m.iterations > max)
    refuse(
      "iterations",
      `asks for ${m.iterations} iterations, outside what this configuration runs: at least ${MIN_ITERATIONS} and at most ${max} (${ITERATIONS_FACTOR} × ${c.address}.iterations, ${c.iterations}). If it was written with more, raise ${c.address}.iterations to at least ${Math.ceil(m.iterations / ITERATIONS_FACTOR)}; else it was altered`,
      { value: m.iterations, min: MIN_ITERATIONS, max },
    );
}

export class Pbkdf2Provider {
  readonly #writer = new Map<string, Promise<{ key: Buffer; meta: Buffer }>>();

  constructor(
    readonly config: Pbkdf2ProviderConfig,
    private readonly randomBytes: (n: number) => Buffer = (n) => nodeCrypto().randomBytes(n),
  ) {}

  /** The writer's key and metadata: one fresh salt per instance, as OpenTofu makes one per run. */
  encryptionKey(): Promise<{ key: Buffer; meta: Buffer }> {
    return cachedPromise(this.#writer, "", async () => {
      const c = this.config;
      const m: Pbkdf2Meta = { salt: this.randomBytes(c.saltLength), iterations: c.iterations, hashFunction: c.hashFunction, keyLength: c.keyLength };
      return { key: await derivePbkdf2(c.passphrase.bytes(), m), meta: encodePbkdf2Meta(m) };
    });
  }

  /** The key for stored metadata (undefined: none for this provider). */
  async decryptionKey(meta: Buffer | undefined, describe: string): Promise<Buffer | undefined> {
    const m = decodePbkdf2Meta(meta, describe);
    if (m === undefined) return undefined;
    checkBounds(m, this.config, describe);
    return derivePbkdf2(this.config.passphrase.bytes(), m);
  }
}
