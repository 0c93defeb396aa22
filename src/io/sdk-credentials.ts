/** The identity shape the AWS SDK v3 clients take. */
interface SdkIdentity {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
  readonly expiration?: Date | undefined;
}

/** An SDK credentials provider marked as already memoized. */
export type SdkCredentialsProvider = (() => Promise<SdkIdentity>) & { memoized: true };

/**
 * Hand our provider (credentials/types.ts, taken structurally) to an SDK client, marked
 * `memoized` so the SDK calls it for every request: ours cache and refresh themselves
 * (credentials/refresh.ts) by a clock tests can control.
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
