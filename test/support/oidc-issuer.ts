/**
 * A real OIDC issuer on 127.0.0.1 for the identity tests: serves discovery and a JWKS over
 * HTTP, signs ID tokens with keys made here (RS256 and ES256), rotates them, and can go down.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from "jose";
import { withLowPort } from "./port.js";

interface Key {
  readonly kid: string;
  readonly alg: "RS256" | "ES256";
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
}

async function makeKey(kid: string, alg: "RS256" | "ES256"): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

export class OidcIssuer {
  /** Keys in the published JWKS. */
  published: Key[] = [];
  /** Requests for the JWKS so far (a refresh shows as one more). */
  jwksFetches = 0;
  /** Requests for the discovery document so far. */
  discoveryFetches = 0;
  /** Paths answered 503 (an issuer failing, but up). */
  failing = new Set<string>();
  /** Bytes of padding added to the JWKS (an oversized answer). */
  jwksPadding = 0;
  private keys = new Map<string, Key>();
  private server: Server | undefined;
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Start with one RS256 and one ES256 key published. */
  static async start(): Promise<OidcIssuer> {
    const i = new OidcIssuer();
    await i.addKey("rs-1", "RS256", true);
    await i.addKey("es-1", "ES256", true);
    await withLowPort((port) => i.listen(port));
    return i;
  }

  async addKey(kid: string, alg: "RS256" | "ES256", publish: boolean): Promise<Key> {
    const k = await makeKey(kid, alg);
    this.keys.set(kid, k);
    if (publish) this.published.push(k);
    return k;
  }

  /** Publish only these keys from now on (a rotation). */
  publishOnly(...kids: string[]): void {
    this.published = kids.map((k) => this.keys.get(k) as Key);
  }

  private listen(port: number): Promise<void> {
    this.server = createServer((req, res) => {
      if (req.url === "/jwks") this.jwksFetches++;
      if (req.url === "/.well-known/openid-configuration") this.discoveryFetches++;
      const body =
        req.url === "/.well-known/openid-configuration"
          ? { issuer: this.url, jwks_uri: `${this.url}/jwks`, id_token_signing_alg_values_supported: ["RS256", "ES256"] }
          : req.url === "/jwks"
            ? { keys: this.published.map((k) => k.jwk), ...(this.jwksPadding > 0 ? { padding: "x".repeat(this.jwksPadding) } : {}) }
            : undefined;
      const failing = this.failing.has(req.url ?? "");
      res.writeHead(failing ? 503 : body === undefined ? 404 : 200, { "content-type": "application/json" });
      res.end(JSON.stringify(body ?? {}));
    });
    const server = this.server;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        this.port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  /** Stop answering (connections refused) ... */
  async down(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s !== undefined) await new Promise<void>((r) => (s.closeAllConnections(), s.close(() => r())));
  }

  /** ... and come back on the same port. */
  up(): Promise<void> {
    return this.listen(this.port);
  }

  /** A signed ID token: defaults iss = this issuer, iat now, exp in 5 min; `claims` override. */
  async sign(claims: JWTPayload, kid = "rs-1", header: Record<string, unknown> = {}): Promise<string> {
    const k = this.keys.get(kid) as Key;
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: this.url, iat: now, exp: now + 300, ...claims })
      .setProtectedHeader({ alg: k.alg, kid, typ: "JWT", ...header })
      .sign(k.privateKey);
  }

  /** The public JWK of a key (for the HS256-with-the-public-key forgery). */
  publicJwk(kid: string): JWK {
    return (this.keys.get(kid) as Key).jwk;
  }
}
