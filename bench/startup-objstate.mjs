// One whole process of the start-up benchmark (bench/startup.mjs): import objstate through
// the package's main entry, build 1 backend + N remote states with the builder API, write
// one document (with objstate's writeToolJson, as cdktf's app.synth() writes its own files;
// an ES-module import of node:fs alone costs ~5 ms on Node 20). Argument: the directory
// to write main.tf.json into.
import { DataRemoteStateObjectStore, DataRemoteStateObjectStoreConfig, ObjectStoreBackendConfig, mergeToolJson, writeToolJson } from "objstate";

const N = Number(process.env.BENCH_STATES ?? 1000);
const docs = [
  ObjectStoreBackendConfig.builder().bucket("state-bucket").key("root.tfstate").kvstoreTable("locks").encrypt(true).region("eu-west-1").build().toToolJson(),
];
for (let i = 0; i < N; i++) {
  const config = DataRemoteStateObjectStoreConfig.builder()
    .bucket("state-bucket")
    .key(`stack-${i}.tfstate`)
    .prefix("states")
    .region("eu-west-1")
    .kvstoreTable("locks")
    .endpoint("https://s3.example.com")
    .workspace("prod")
    .defaults({ vpc_id: "vpc-0", subnets: ["a", "b"] })
    .build();
  docs.push(new DataRemoteStateObjectStore(`stack_${i}`, config).toToolJson());
}
writeToolJson(`${process.argv[2]}/main.tf.json`, mergeToolJson(...docs));
