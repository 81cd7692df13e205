#!/usr/bin/env bash
# The CLI, trust, host check and hub suites again, against the single binary
# ($1) instead of bin/run.js. The files below start no edgeadm process (they
# drive the hub, the tunnel, the etcd store or the library in the test's own
# process): run again they would only repeat what npm test ran, so they are
# left out. A file missing from this list is merely run twice.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$1
IN_PROCESS_ONLY=(
  test/integration/cli/typescript-api.test.ts
  test/integration/trust/discovery.test.ts
  test/integration/trust/discovery-without-anonymous.test.ts
  test/integration/hub/etcd/etcd-coordination.test.ts
  test/integration/hub/etcd/etcd-harness.test.ts
  test/integration/hub/etcd/etcd-identity.test.ts
  test/integration/hub/exhaustion.test.ts
  test/integration/hub/handshake-bound.test.ts
  test/integration/hub/hub-rollouts.test.ts
  test/integration/hub/peer-web-attacks.test.ts
  test/integration/hub/rollout-agent-tunnel.test.ts
  test/integration/hub/store-contract.test.ts
  test/integration/hub/tunnel-agent-unit.test.ts
  test/integration/hub/tunnel-sessions.test.ts
  test/integration/hub/web-api.test.ts
)
exclude=()
for file in "${IN_PROCESS_ONLY[@]}"; do exclude+=(--exclude "$file"); done
EDGEADM_BIN="$PWD/$binary" npx vitest run test/integration/cli test/integration/trust \
  test/integration/hosts/host-check-cli.test.ts test/integration/hub "${exclude[@]}"
