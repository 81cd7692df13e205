#!/usr/bin/env bash
# The README's two commands, on a fresh Debian 12 machine with Node.js, npm
# and Go (as root): each installs what it needs when it is missing, then runs.
#
#   bash scripts/run.sh demo     the main job on real Kubernetes: init, join ×2 --enable-edge,
#                                real pods on the edge nodes, kubectl logs and exec, reset
#                                (add --quick for the simulated cluster in a minute)
#   bash scripts/run.sh test     lint, the whole suite, the single binary, the quick demo and the
#                                real-Kubernetes lane; .ci/run runs exactly this
#
# Set-up, each step skipped when already done:
#   1. the Debian packages of scripts/debian-packages.txt (one list for both commands and CI);
#   2. npm ci (the project pins Node 24 as a devDependency; npm scripts use it);
#   3. the real-Kubernetes rig: test/real/build.sh builds kubeadm, kubelet, the control
#      plane, kubectl, etcd and CoreDNS, and cosign (for the package signature differential),
#      from their Go modules into /var/cache/edgeadm-rig (about 19 minutes on 2 cores the
#      first time, seconds after).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: bash scripts/run.sh demo [--quick] | test" >&2
  exit 2
}
[ $# -ge 1 ] || usage
what=$1
shift

if [ "$(id -u)" != 0 ]; then
  echo "run.sh: run as root: the demo and the tests start SSH hosts in network namespaces and install Debian packages" >&2
  exit 1
fi
for tool in node npm go; do
  command -v "$tool" >/dev/null || {
    echo "run.sh: $tool is missing: install Node.js and npm (any version: the project brings Node 24 itself) and Go (1.24 or newer)" >&2
    exit 1
  }
done

mapfile -t packages < <(grep -vE '^\s*(#|$)' scripts/debian-packages.txt | awk '{ print $1 }')
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "run.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "run.sh: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
# npm puts node_modules/.bin first on PATH for scripts; do the same here so every step runs on the pinned Node 24.
export PATH="$PWD/node_modules/.bin:$PATH"
echo "run.sh: node $(node --version)"

build_rig() {
  local started=$SECONDS
  test/real/build.sh
  echo "run.sh: real-Kubernetes rig ready ($((SECONDS - started)) s)"
}
binary="dist/edgeadm-linux-$(node -p process.arch)"

case "$what" in
  demo)
    npm run build
    if [ "${1:-}" = --quick ]; then
      exec npm run demo
    fi
    build_rig
    node scripts/build-binary.js
    exec npm run demo -- --binary "$binary" --real
    ;;
  test)
    # The suites install edgeadm's tunnel agent on test hosts, where it runs as an unprivileged user from this
    # checkout: a checkout other users cannot read (a clone under /root, which is 0700) fails them one by one.
    if command -v runuser >/dev/null && ! runuser -u nobody -- test -r "$PWD/package.json"; then
      echo "run.sh: other users cannot read this checkout ($PWD): the tests run edgeadm's tunnel agent as an" >&2
      echo "run.sh: unprivileged user from it. Clone the repository where they can (for example /usr/src/edgeadm," >&2
      echo "run.sh: not under /root) and run again." >&2
      exit 1
    fi
    # The test hosts get empty directories of their own where edgeadm installs (test/support/test-hosts.ts,
    # TMPFS_DIRS); a checkout under one of them would show inside every host's, which must start empty.
    case "$PWD/" in
      /opt/* | /usr/local/bin/* | /etc/edgeadm/* | /var/lib/edgeadm/* | /etc/systemd/system/* | /etc/rancher/* | \
        /var/lib/rancher/* | /etc/kubernetes/* | /var/lib/kubelet/* | /var/lib/etcd/* | /etc/containerd/* | /var/lib/containerd/*)
        echo "run.sh: this checkout ($PWD) is under a directory the test hosts get empty, of their own, where" >&2
        echo "run.sh: edgeadm installs. Clone the repository elsewhere (for example /usr/src/edgeadm) and run again." >&2
        exit 1
        ;;
    esac
    echo "run.sh: lint"
    npm run lint
    npm run typecheck
    build_rig
    echo "run.sh: test"
    test_log=$(mktemp)
    trap 'rm -f "$test_log" "$test_log.real"' EXIT
    npm test 2>&1 | tee "$test_log"
    echo "run.sh: single binary"
    # npm test's pretest built lib/ from the same sources a few minutes ago (build-binary.js refuses a stale manifest).
    node scripts/build-binary.js
    node scripts/smoke-binary.js
    # The quick demo on the simulated cluster; the real lane below runs the same main job (the --real demo's
    # code, test/support/real/main-job.ts) on real Kubernetes, with its assertions.
    npm run demo -- --binary "$binary"
    echo "run.sh: the real-Kubernetes lane"
    # Each file runs a whole cluster on this machine's two cores; a lane that fails is
    # run once more, and both runs are shown (a second failure fails the run).
    if ! EDGEADM_BIN="$PWD/$binary" npm run test:real 2>&1 | tee -a "$test_log.real"; then
      echo "run.sh: the real-Kubernetes lane failed once; running it again (its first run is above)"
      EDGEADM_BIN="$PWD/$binary" npm run test:real 2>&1 | tee -a "$test_log"
    else
      cat "$test_log.real" >> "$test_log"
    fi
    echo "run.sh: the CLI, trust, host check and hub suites again, against the single binary"
    bash scripts/binary-suites.sh "$binary" 2>&1 | tee -a "$test_log"
    # The suites' own counts, as the closing line.
    grep -E '^tests: [0-9]+ passed, [0-9]+ failed' "$test_log" |
      awk '{ p += $2; f += $4; s += $6 } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }'
    ;;
  *) usage ;;
esac
