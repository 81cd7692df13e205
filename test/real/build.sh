#!/usr/bin/env bash
# Builds the real-Kubernetes rig's programs from their own Go modules, into a
# cache that later runs reuse:
#   kubernetes/  kubeadm, kubelet, kube-apiserver, kube-controller-manager, kubectl,
#                kube-scheduler, kube-proxy (k8s.io/kubernetes, pinned in kubernetes/go.mod)
#   etcd/        etcd (go.etcd.io/etcd/server/v3, the release kubeadm's stacked etcd names)
#   coredns/     coredns (github.com/coredns/coredns, the release kubeadm deploys)
#   cosign/      cosign (github.com/sigstore/cosign/v2/cmd/cosign), for the package
#                signature differential (test/integration/packages/cosign-differential.test.ts)
# and, not built by default (its cold build took 871 s on two busy cores, past the
# five minutes a default set may add to a cold CI run):
#   promtool/    promtool (github.com/prometheus/prometheus/cmd/promtool), which checks and
#                unit-tests the hub's alert rules (test/integration/hub/prometheus-rules.test.ts,
#                which otherwise only parses them)
# and, for the benchmarks only (not built by default; bench/peers/<set>/go.mod):
#   remotedialer remotedialer-peer (a server and client driver over Rancher's remotedialer)
#   konnectivity proxy-server, proxy-agent (sigs.k8s.io/apiserver-network-proxy)
#   chisel       chisel (github.com/jpillora/chisel)
#   yurthub      yurthub (github.com/openyurtio/openyurt/cmd/yurthub)
# Each set lands in $EDGEADM_RIG_CACHE/out/<set>-<key>/, where <key> hashes the
# set's go.mod, go.sum and build flags, with versions.json (version, SHA-256 of
# every binary, build seconds). A set whose directory is complete is not built
# again. Nothing built here is committed or shipped: the binaries go into test
# install packages (test/real/rig.ts) for the real suites and the --real demo.
#
# Usage: test/real/build.sh [kubernetes|etcd|coredns|cosign|promtool ...]   (default: kubernetes etcd coredns cosign)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${EDGEADM_RIG_CACHE:-/var/cache/edgeadm-rig}
export GOMODCACHE="$cache/gomod" GOCACHE="$cache/gobuild" GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
command -v go >/dev/null || { echo "real-rig: go is missing: the rig builds Kubernetes from its Go modules (Go 1.24 or newer)" >&2; exit 1; }
mkdir -p "$cache/out"

# ldflags that give the Kubernetes commands their release version (as the
# release build's hack/lib/version.sh does); without them they report v0.0.0.
k8s_ldflags() {
  local version=$1 minor
  minor=$(echo "$version" | cut -d. -f2)
  local flags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    flags+=" -X $pkg.gitCommit=0000000000000000000000000000000000000000 -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

module_version() { # the required version of $2 in the module at $1
  (cd "$1" && go list -m -f '{{.Version}}' "$2")
}

build_set() {
  local set=$1 module_dir="$here/$1" ldflags="-s -w" packages version binaries
  case "$set" in
    kubernetes)
      version=$(module_version "$module_dir" k8s.io/kubernetes)
      ldflags=$(k8s_ldflags "$version")
      binaries=(kubeadm kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl)
      packages=()
      for b in "${binaries[@]}"; do packages+=("k8s.io/kubernetes/cmd/$b"); done
      ;;
    etcd)
      version=$(module_version "$module_dir" go.etcd.io/etcd/server/v3)
      ldflags="-s -w"
      binaries=(etcd)
      packages=(go.etcd.io/etcd/server/v3)
      ;;
    coredns)
      version=$(module_version "$module_dir" github.com/coredns/coredns)
      ldflags="-s -w"
      binaries=(coredns)
      packages=(github.com/coredns/coredns)
      ;;
    cosign)
      version=$(module_version "$module_dir" github.com/sigstore/cosign/v2)
      # cosign's own release build sets its version the same way (sigs.k8s.io/release-utils).
      ldflags="-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$version"
      binaries=(cosign)
      packages=(github.com/sigstore/cosign/v2/cmd/cosign)
      ;;
    promtool)
      version=$(module_version "$module_dir" github.com/prometheus/prometheus)
      # Module v0.MMmm.p is Prometheus release M.mm.p (v0.316.0 is 3.16.0); its release build
      # sets the version so (.promu.yml), and `promtool --version` then names the release.
      local release_number=${version#v0.}
      release_number=${release_number%%.*}
      ldflags="-s -w -X github.com/prometheus/common/version.Version=$((release_number / 100)).$((release_number % 100)).${version##*.}"
      binaries=(promtool)
      packages=(github.com/prometheus/prometheus/cmd/promtool)
      ;;
    remotedialer)
      module_dir="$here/../../bench/peers/$set"
      version=$(module_version "$module_dir" github.com/rancher/remotedialer)
      binaries=(remotedialer-peer)
      packages=(.)
      ;;
    konnectivity)
      module_dir="$here/../../bench/peers/$set"
      version=$(module_version "$module_dir" sigs.k8s.io/apiserver-network-proxy)
      binaries=(proxy-server proxy-agent)
      packages=(sigs.k8s.io/apiserver-network-proxy/cmd/server sigs.k8s.io/apiserver-network-proxy/cmd/agent)
      ;;
    chisel)
      module_dir="$here/../../bench/peers/$set"
      version=$(module_version "$module_dir" github.com/jpillora/chisel)
      ldflags="-s -w -X github.com/jpillora/chisel/share.BuildVersion=$version"
      binaries=(chisel)
      packages=(github.com/jpillora/chisel)
      ;;
    yurthub)
      module_dir="$here/../../bench/peers/$set"
      version=$(module_version "$module_dir" github.com/openyurtio/openyurt)
      binaries=(yurthub)
      packages=(github.com/openyurtio/openyurt/cmd/yurthub)
      ;;
    *) echo "real-rig: unknown set $set (kubernetes, etcd, coredns, cosign, promtool; for the benchmarks remotedialer, konnectivity, chisel, yurthub)" >&2; return 1 ;;
  esac
  local key out
  # The key covers a driver's own source too (bench/peers/remotedialer/main.go).
  key=$(cat "$module_dir/go.mod" "$module_dir/go.sum" $(find "$module_dir" -maxdepth 1 -name '*.go' | sort) \
    <(echo "$ldflags $(go version)") | sha256sum | cut -c1-16)
  out="$cache/out/$set-$key"
  if [ -f "$out/versions.json" ]; then
    echo "real-rig: $set $version already built ($out)"
    ln -sfn "$out" "$cache/out/$set"
    return 0
  fi
  echo "real-rig: building $set $version (${binaries[*]}) into $out"
  local tmp="$out.tmp" start end
  rm -rf "$tmp" && mkdir -p "$tmp"
  start=$(date +%s)
  (cd "$module_dir" && go mod download && go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${packages[@]}")
  # go names a binary after its package directory (or its module, for "."): give each its name.
  case "$set" in
    etcd) mv "$tmp/server" "$tmp/etcd" ;;
    remotedialer) mv "$tmp/remotedialer" "$tmp/remotedialer-peer" ;;
    konnectivity) mv "$tmp/server" "$tmp/proxy-server" && mv "$tmp/agent" "$tmp/proxy-agent" ;;
  esac
  end=$(date +%s)
  {
    printf '{\n  "set": "%s",\n  "version": "%s",\n  "go": "%s",\n  "buildSeconds": %d,\n  "sha256": {\n' \
      "$set" "$version" "$(go env GOVERSION)" $((end - start))
    local first=1
    for b in "${binaries[@]}"; do
      [ -f "$tmp/$b" ] || { echo "real-rig: $set: $b was not built" >&2; return 1; }
      [ $first = 1 ] || printf ',\n'
      printf '    "%s": "%s"' "$b" "$(sha256sum "$tmp/$b" | cut -d' ' -f1)"
      first=0
    done
    printf '\n  }\n}\n'
  } > "$tmp/versions.json"
  mv "$tmp" "$out"
  ln -sfn "$out" "$cache/out/$set"
  echo "real-rig: built $set $version in $((end - start)) s"
}

sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(kubernetes etcd coredns cosign)
for set in "${sets[@]}"; do build_set "$set"; done
