/** Encryption at rest for the server's tests: a backend connected with `encryption`, and the bucket's raw bytes. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../src/index.js";
import type { EncryptionConfig } from "../../src/encryption/index.js";

/** A backend whose state I/O encrypts with `encryption`. */
export function connectAtRest(props: ObjectStoreBackendConfigProps, encryption: EncryptionConfig): Promise<ObjectStoreBackend> {
  return ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined, encryption });
}

/** Every file under a directory (an embedded bucket's objects, versions and metadata), for a search of their raw bytes. */
export function filesUnder(dir: string): Buffer[] {
  const out: Buffer[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(readFileSync(p));
    }
  };
  walk(dir);
  return out;
}
