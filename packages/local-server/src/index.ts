// What starting a server on this machine needs: a free loopback port, whether a port is open yet,
// the nats-server binary. Shared by `geode up`, infra/cluster and the tests.
export { findNatsServerBinary } from "./nats-server-binary.js";
export { freePort, portOpen } from "./ports.js";
