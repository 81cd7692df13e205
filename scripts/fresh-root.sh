#!/bin/bash
# Runs one of the README's two commands on a fresh clone inside a Debian 12 root made by
# debootstrap (minbase + git + ca-certificates: none of scripts/debian-packages.txt), with
# Node.js and npm (this machine's, copied) and Go (/usr/local/go, bound), in a mount namespace
# of its own whose root it is (pivot_root, as on a machine; a chroot breaks `kubectl exec`).
# Shared with the machine: the test-host slot claims (so runs never collide) and, unless COLD=1,
# the rig's Go caches (/var/cache/edgeadm-rig).
#
#   debootstrap --variant=minbase --include=ca-certificates,git bookworm /var/tmp/fresh-root http://deb.debian.org/debian
#   bash scripts/fresh-root.sh test      # or: demo; FRESH_ROOT=DIR for a root elsewhere
set -euo pipefail
# In a mount namespace of its own: the root's mounts (its /sys) must not show in the machine's mount table,
# where a kubelet or kubeadm of another run would find them.
if [ -z "${FRESH_ROOT_NS:-}" ]; then FRESH_ROOT_NS=1 exec unshare -m --propagation private "$0" "$@"; fi
R=${FRESH_ROOT:-/var/tmp/fresh-root}
what=${1:-test}
cp /usr/bin/node $R/usr/bin/node
mkdir -p $R/usr/lib/node_modules $R/usr/local/go
rm -rf $R/usr/lib/node_modules/npm && cp -a /usr/lib/node_modules/npm $R/usr/lib/node_modules/npm
ln -sf ../lib/node_modules/npm/bin/npm-cli.js $R/usr/bin/npm
ln -sf ../lib/node_modules/npm/bin/npx-cli.js $R/usr/bin/npx
cp /etc/resolv.conf $R/etc/resolv.conf
# The machine's own trust (its egress CA) and npm settings, as every machine of this kind has them.
mkdir -p $R/usr/local/share/ca-certificates && cp /usr/local/share/ca-certificates/* $R/usr/local/share/ca-certificates/
chroot $R update-ca-certificates >/dev/null 2>&1 || true
cp /etc/npmrc $R/etc/npmrc 2>/dev/null || true
mkdir -p $R/run/edgeadm-test-hosts /run/edgeadm-test-hosts $R/var/cache/edgeadm-rig
mounts=()
m() { mount "$@"; mounts+=("${@: -1}"); }
# The root a mount point of its own, as on any machine (ip netns runs "mount --make-rslave /").
m --bind $R $R
m -t proc proc $R/proc
m --rbind /sys $R/sys
m --rbind /dev $R/dev
m --bind /usr/local/go $R/usr/local/go
[ -n "${COLD:-}" ] || m --bind /var/cache/edgeadm-rig $R/var/cache/edgeadm-rig
m -t tmpfs tmpfs $R/tmp
# /run a tmpfs, as at any boot: a package's postinst (systemd's) must not leave /run/systemd/system behind.
m -t tmpfs tmpfs $R/run
mkdir -p $R/run/edgeadm-test-hosts
m --bind /run/edgeadm-test-hosts $R/run/edgeadm-test-hosts
cleanup() { for ((i=${#mounts[@]}-1; i>=0; i--)); do umount -R "${mounts[$i]}" 2>/dev/null || umount -l "${mounts[$i]}" || true; done; }
trap cleanup EXIT
rm -rf $R/usr/src/edgeadm
git clone -q "${REPO:-$(git -C "$(dirname "$0")" rev-parse --show-toplevel)}" $R/usr/src/edgeadm
# Entered with pivot_root, not chroot: the root must be the root of its mount namespace, as a machine's
# is. setns(2) into a mount namespace puts the caller at that namespace's root mount, and runc's exec
# joins the container's namespace that way. Under a chroot that root is this machine's, with the
# container's rootfs pivoted onto $R beneath it, so `kubectl exec` ran at the machine's / and read its
# /proc (PID 1 /process_api) instead of the pod's. In a nested namespace, so that this script keeps
# its own mounts to clean up; `pivot_root . .` stacks the old root on the new one, `umount -l /` drops it.
(cd $R && exec unshare -m --propagation private sh -c 'pivot_root . . && umount -l / && cd / && exec "$@"' sh /usr/bin/env -i HOME=/root PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
  bash -c "cd /usr/src/edgeadm && git log -1 --oneline && dpkg -l openssh-server sudo containerd 2>&1 | tail -3; bash scripts/run.sh $what")
