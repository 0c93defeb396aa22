import { DataRemoteStateObjectStoreConfig, type DataRemoteStateObjectStoreConfigProps } from "../config/remote-state-config.js";
import { checkName, remoteStateToolJson, type RemoteStateToolJson } from "../config/tool-json.js";
import { remoteStateTerraformJson, type TerraformRemoteStateJson, type TerraformRemoteStateOptions } from "../config/terraform-json.js";
import type { FetchOutputsOptions, RemoteOutputs } from "./remote-outputs.js";

/**
 * A named remote state: synthesizes its `data.tool_remote_state.NAME` block and references to
 * its outputs, and reads the outputs at run time.
 *
 * @example
 * const net = new DataRemoteStateObjectStore("net", DataRemoteStateObjectStoreConfig.from({ bucket: "states", key: "net.tfstate" }));
 * net.getString("vpc_id"); // "${data.tool_remote_state.net.outputs.vpc_id}"
 * (await net.fetchOutputs()).string("vpc_id"); // "vpc-0a1b2c"
 */
export class DataRemoteStateObjectStore {
  /** Block name in `data.tool_remote_state`. */
  readonly name: string;
  readonly config: DataRemoteStateObjectStoreConfig;

  constructor(name: string, config: DataRemoteStateObjectStoreConfig | DataRemoteStateObjectStoreConfigProps) {
    checkName(name, "remote state name");
    this.name = name;
    this.config = config instanceof DataRemoteStateObjectStoreConfig ? config : DataRemoteStateObjectStoreConfig.from(config);
  }

  /** The `{"data": {"tool_remote_state": {NAME: …}}}` document. */
  toToolJson(): RemoteStateToolJson {
    return remoteStateToolJson(this.name, this.config);
  }

  /**
   * The real tool's `{"data": {"terraform_remote_state": {NAME: …}}}` document, through its `s3`,
   * `oss` or `http` backend; refer to its outputs with {@link terraformRef}.
   * @example net.toTerraformJson({ backend: "s3" });
   */
  toTerraformJson(options: TerraformRemoteStateOptions): TerraformRemoteStateJson {
    return remoteStateTerraformJson(this.name, this.config, options);
  }

  /** Reference to output `output` in the real tool's document: `${data.terraform_remote_state.NAME.outputs.OUTPUT}`. */
  terraformRef(output: string): string {
    checkName(output, "output name");
    return `\${data.terraform_remote_state.${this.name}.outputs.${output}}`;
  }

  /** Reference to output `output`: `${data.tool_remote_state.NAME.outputs.OUTPUT}`. */
  get(output: string): string {
    checkName(output, "output name");
    return `\${data.tool_remote_state.${this.name}.outputs.${output}}`;
  }

  /** The same text as {@link get}: the name documents intent. */
  getString(output: string): string {
    return this.get(output);
  }

  getNumber(output: string): string {
    return this.get(output);
  }

  getList(output: string): string {
    return this.get(output);
  }

  getBoolean(output: string): string {
    return this.get(output);
  }

  /**
   * The root outputs of the stored state of `config.workspace` (default `default`), over
   * `config.defaults`, from state formats 1 to 4. Digest-checked with a lock table; takes no lock.
   * @throws ObjstateError `STATE_NOT_FOUND` (none, or 0 bytes), `STATE_INVALID` (not JSON, with
   *   line and column; not a state; malformed outputs; nested over 10,000 levels),
   *   `DIGEST_MISMATCH`, and the backend's connection errors.
   */
  async fetchOutputs(options: FetchOutputsOptions = {}): Promise<RemoteOutputs> {
    const { fetchRemoteOutputs } = await import("./fetch-outputs.js");
    return fetchRemoteOutputs(this.name, this.config, options);
  }
}
