/** The identity shape the AWS SDK v3 clients take. */
export interface SdkIdentity {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
  readonly expiration?: Date | undefined;
}

/** An SDK credentials provider marked as already memoized. */
export type SdkCredentialsProvider = (() => Promise<SdkIdentity>) & { memoized: true };

/**
 * Hand our provider (credentials/types.ts's `CredentialsProvider`, which yields this same
 * shape: taken structurally, so this layer need not know the identity chain) to an SDK
 * client. Marked `memoized` so the SDK calls it for every
 * request instead of caching by its own clock: our providers cache and refresh
 * themselves (credentials/refresh.ts), before expiry, by a clock tests can control.
 */
export function sdkCredentials(
  provider: () => Promise<SdkIdentity>,
  onError: (e: unknown) => never = (e) => {
    throw e;
  },
): SdkCredentialsProvider {
  const fn = async (): Promise<SdkIdentity> => {
    try {
      const c = await provider();
      return { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey, sessionToken: c.sessionToken, expiration: c.expiration };
    } catch (e) {
      return onError(e);
    }
  };
  return Object.assign(fn, { memoized: true as const });
}
