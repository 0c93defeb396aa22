/** `objstate serve --secret-file FILE`: a secret the replicas share, keying the console's form tokens, so a form from one may be posted to another. */
import { createHmac } from "node:crypto";
import { ReadFileError, readBoundedFile } from "../io/read-file.js";
import { usageError } from "./io.js";

/** Fewest bytes of secret, surrounding whitespace left out: 256 bits raw, 192 as base64 text. */
export const MIN_SECRET_BYTES = 32;

const MAX_SECRET_FILE_BYTES = 64 * 1024;

/** The form-token key's label: the same secret can key other things without reuse. */
const FORM_KEY_LABEL = "objstate console form tokens v1";

function howToMake(file: string): string {
  return `make one with (umask 077; openssl rand -base64 48 > ${file})`;
}

/** A regular file only its owner may read or change (no mode bits on Windows), of at least {@link MIN_SECRET_BYTES}; errors name the file and the fix, never the content. */
export function readSecretFile(file: string, platform: NodeJS.Platform = process.platform): Buffer {
  if (file === "-" || file === "")
    throw usageError(`--secret-file needs the path of a file (standard input is not read): ${howToMake("FILE")}`, "SECRET_FILE_UNREADABLE");
  let read;
  try {
    read = readBoundedFile(file, MAX_SECRET_FILE_BYTES);
  } catch (e) {
    if (e instanceof ReadFileError)
      throw usageError(`cannot read --secret-file ${file}: it ${e.reason.replace(/^no such file$/, "does not exist")}`, "SECRET_FILE_UNREADABLE", e);
    throw e;
  }
  // The mode of the descriptor that was read: a file swapped in after a check cannot pass it.
  const mode = read.mode ?? 0;
  if (platform !== "win32" && (mode & 0o077) !== 0) {
    const octal = (mode & 0o777).toString(8).padStart(4, "0");
    throw usageError(
      `--secret-file ${file} can be read or changed by other users (mode ${octal}): a secret must be its owner's alone; run chmod 600 ${file}`,
      "SECRET_FILE_OPEN",
    );
  }
  const secret = trimWhitespace(read.bytes);
  if (secret.length < MIN_SECRET_BYTES) {
    throw usageError(
      `--secret-file ${file} holds ${secret.length} bytes of secret; at least ${MIN_SECRET_BYTES} are needed: ${howToMake(file)}`,
      "SECRET_TOO_SHORT",
    );
  }
  return secret;
}

/** Whitespace trimmed from both ends: a newline `echo` or an editor added must not make two replicas' keys differ. */
function trimWhitespace(bytes: Buffer): Buffer {
  const ws = (b: number | undefined): boolean => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
  let start = 0;
  let end = bytes.length;
  while (start < end && ws(bytes[start])) start++;
  while (end > start && ws(bytes[end - 1])) end--;
  return bytes.subarray(start, end);
}

/** The console's form-token key: HMAC-SHA256 of a label, so every replica derives the same key and the secret itself keys nothing. */
export function formKeyOf(secret: Buffer): Buffer {
  return createHmac("sha256", secret).update(FORM_KEY_LABEL).digest();
}
