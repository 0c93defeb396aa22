/**
 * A fresh bucket and lock table on Ceph RGW + dynalite, with a fault proxy in front of
 * each server. `direct` talks to the servers themselves (a healthy gateway); `proxied`
 * goes through the proxies (a gateway or table the test can stall or make lose replies).
 */
import type { ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { openLockTable } from "../../../src/lock/index.js";
import { startFaultProxy, type FaultProxy } from "../../support/fault-proxy.js";
import { testServers } from "../../support/servers.js";
import { cephTarget } from "../../support/targets.js";
import { cliFor, type Cli, type Proc } from "../../unit/faults/harness.js";

export interface Faulty {
  readonly props: ObjectStoreBackendConfigProps;
  /** In front of Ceph RGW (S3). */
  readonly s3: FaultProxy;
  /** In front of dynalite (the lock table). */
  readonly table: FaultProxy;
  /** The CLI against the servers themselves. */
  readonly direct: Cli;
  /** The CLI through both proxies. */
  readonly proxied: Cli;
  /** Start the CLI through both proxies in the background. */
  readonly startProxied: (cmd: string[]) => Proc;
  /** An item attribute in the lock table, read straight from dynalite. */
  item(id: string, attr: string): Promise<string | null>;
  close(): Promise<void>;
}

export async function faulty(): Promise<Faulty> {
  const servers = testServers();
  const props = await cephTarget().setup({ locks: true });
  const s3 = await startFaultProxy(servers.s3Endpoint);
  const table = await startFaultProxy(servers.dynamoEndpoint);
  const viaProxies = cliFor({ ...props, endpoint: s3.url, kvstoreEndpoint: table.url });
  return {
    props,
    s3,
    table,
    direct: cliFor(props).cli,
    proxied: viaProxies.cli,
    startProxied: viaProxies.start,
    item: async (id, attr) => {
      const t = await openLockTable({
        table: props.kvstoreTable as string,
        endpoint: servers.dynamoEndpoint,
        credentials: () => Promise.resolve({ accessKeyId: servers.accessKey, secretAccessKey: servers.secretKey }),
      });
      try {
        return await t.get(id, attr);
      } finally {
        t.close();
      }
    },
    close: async () => {
      await Promise.all([s3.close(), table.close()]);
    },
  };
}

/** The lock table key of a workspace's state (`{bucket}/{statePath}`), as docs/design.md §5 lays it out. */
export function stateLockId(props: ObjectStoreBackendConfigProps, workspace = "default"): string {
  return workspace === "default" ? `${props.bucket}/env:/tool.tfstate` : `${props.bucket}/env:/${workspace}/tool.tfstate`;
}
