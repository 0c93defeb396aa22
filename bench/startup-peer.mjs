// The peer's side of the start-up benchmark (bench/startup.mjs): CDK for Terraform 0.21
// (a pinned devDependency), the same job with its OSS backend and remote state: 1 backend
// + N remote states, synthesized and written by `app.synth()`. Argument: the output directory.
import { App, DataTerraformRemoteStateOss, OssBackend, TerraformStack } from "cdktf";

const N = Number(process.env.BENCH_STATES ?? 1000);
const app = new App({ outdir: process.argv[2] });
const stack = new TerraformStack(app, "bench");
new OssBackend(stack, { bucket: "state-bucket", key: "root.tfstate", tablestoreTable: "locks", encrypt: true, region: "eu-west-1" });
for (let i = 0; i < N; i++) {
  new DataTerraformRemoteStateOss(stack, `stack_${i}`, {
    bucket: "state-bucket",
    key: `stack-${i}.tfstate`,
    prefix: "states",
    region: "eu-west-1",
    tablestoreTable: "locks",
    endpoint: "https://s3.example.com",
    workspace: "prod",
    defaults: { vpc_id: "vpc-0", subnets: ["a", "b"] },
  });
}
app.synth();
