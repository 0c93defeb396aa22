/** Static or temporary credentials for signing requests. */
export interface Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
  /** When temporary credentials stop working. */
  readonly expiration?: Date | undefined;
}

/** Supplies credentials; called by the SDK whenever it needs them (so it can refresh). */
export type CredentialsProvider = () => Promise<Credentials>;
