/**
 * Loopback stand-ins for the AWS services the standard credential chain asks: the EC2
 * instance metadata service (IMDSv2: a token, then the role, then its credentials), the
 * container credentials service, and an STS that answers AssumeRoleWithWebIdentity. Each
 * records what it was asked, so tests can show a source was (or was not) reached.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { listenLow } from "./port.js";

export interface TempCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
  readonly expiration: Date;
}

/** A request as a stand-in saw it. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

export interface LoopbackServer {
  readonly url: string;
  readonly requests: SeenRequest[];
  close(): Promise<void>;
}

async function serve(handle: (req: SeenRequest, res: import("node:http").ServerResponse) => void): Promise<LoopbackServer> {
  const requests: SeenRequest[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const seen = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      requests.push(seen);
      handle(seen, res);
    });
  });
  await listenLow(server);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The IMDS credentials document of `c`. */
function imdsDocument(c: TempCredentials): string {
  return JSON.stringify({
    Code: "Success",
    LastUpdated: new Date().toISOString(),
    Type: "AWS-HMAC",
    AccessKeyId: c.accessKeyId,
    SecretAccessKey: c.secretAccessKey,
    Token: c.sessionToken,
    Expiration: c.expiration.toISOString(),
  });
}

/**
 * IMDSv2 on loopback: `PUT /latest/api/token`, then `GET …/iam/security-credentials/`
 * (the role name) and `GET …/iam/security-credentials/ROLE` with the token. With
 * `silent`, it takes every request and never answers.
 */
export function startImds(options: { readonly role: string; readonly credentials?: TempCredentials; readonly silent?: boolean }): Promise<LoopbackServer> {
  const TOKEN = "imds-session-token";
  return serve((req, res) => {
    if (options.silent === true) return;
    if (req.method === "PUT" && req.path === "/latest/api/token") return void res.writeHead(200, { "content-type": "text/plain" }).end(TOKEN);
    if (req.headers["x-aws-ec2-metadata-token"] !== TOKEN) return void res.writeHead(401).end();
    if (req.path === "/latest/meta-data/iam/security-credentials/") return void res.writeHead(200, { "content-type": "text/plain" }).end(options.role);
    if (req.path === `/latest/meta-data/iam/security-credentials/${options.role}` && options.credentials !== undefined)
      return void res.writeHead(200, { "content-type": "application/json" }).end(imdsDocument(options.credentials));
    res.writeHead(404).end();
  });
}

/** The container credentials service: `GET /creds` with `Authorization: TOKEN`. */
export function startContainerService(options: { readonly token: string; readonly credentials: TempCredentials }): Promise<LoopbackServer> {
  return serve((req, res) => {
    if (req.method !== "GET" || req.path !== "/creds") return void res.writeHead(404).end();
    if (req.headers["authorization"] !== options.token)
      return void res.writeHead(403, { "content-type": "application/json" }).end(JSON.stringify({ Code: "AccessDenied", Message: "bad token" }));
    const c = options.credentials;
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ AccessKeyId: c.accessKeyId, SecretAccessKey: c.secretAccessKey, Token: c.sessionToken, Expiration: c.expiration.toISOString() }));
  });
}

/**
 * An STS that answers `AssumeRoleWithWebIdentity` (form-encoded POST) with `credentials`
 * when the token and role are the expected ones, and `AccessDenied` otherwise.
 */
export function startWebIdentitySts(options: {
  readonly token: string;
  readonly roleArn: string;
  readonly credentials: TempCredentials;
}): Promise<LoopbackServer> {
  return serve((req, res) => {
    const form = new URLSearchParams(req.body);
    const ok =
      req.method === "POST" &&
      form.get("Action") === "AssumeRoleWithWebIdentity" &&
      form.get("WebIdentityToken") === options.token &&
      form.get("RoleArn") === options.roleArn;
    if (!ok) {
      res
        .writeHead(403, { "content-type": "text/xml" })
        .end(
          `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not this token</Message></Error><RequestId>r</RequestId></ErrorResponse>`,
        );
      return;
    }
    const c = options.credentials;
    const session = form.get("RoleSessionName") ?? "";
    res
      .writeHead(200, { "content-type": "text/xml" })
      .end(
        `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>` +
          `<Credentials><AccessKeyId>${c.accessKeyId}</AccessKeyId><SecretAccessKey>${c.secretAccessKey}</SecretAccessKey><SessionToken>${c.sessionToken}</SessionToken><Expiration>${c.expiration.toISOString()}</Expiration></Credentials>` +
          `<AssumedRoleUser><Arn>${options.roleArn.replace(":role/", ":assumed-role/")}/${session}</Arn><AssumedRoleId>AROA:${session}</AssumedRoleId></AssumedRoleUser>` +
          `<SubjectFromWebIdentityToken>ci</SubjectFromWebIdentityToken></AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`,
      );
  });
}
