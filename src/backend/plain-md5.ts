/**
 * Plaintext MD5s of envelopes by the envelope's MD5 (issue 26): a server answers a GET of a
 * state it decrypted with the state's Content-MD5, and hashing the state on every GET cost
 * more than decrypting it. The envelope fixes its plaintext, and the read proves the
 * envelope is the recorded version (its digest) and authentic (its tag), so the plaintext's
 * MD5 is taken once per version and process, or comes from the write that made it.
 */
/** How many envelopes' plaintext MD5s a connection remembers. */
const PLAIN_MD5_MEMO = 256;

/**
 * The MD5 of the state in an envelope, by the envelope's own MD5: the envelope fixes its
 * plaintext, so it is hashed once per version and process (or known from the write that
 * made it) instead of on every read that needs it (a server's Content-MD5). Oldest first out.
 */
export class PlainMd5Memo {
  private readonly map = new Map<string, string>();

  get(envelopeMd5: string): string | undefined {
    return this.map.get(envelopeMd5);
  }

  set(envelopeMd5: string, plainMd5: string): void {
    this.map.delete(envelopeMd5);
    this.map.set(envelopeMd5, plainMd5);
    if (this.map.size > PLAIN_MD5_MEMO) this.map.delete(this.map.keys().next().value as string);
  }
}
