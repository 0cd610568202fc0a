#!/usr/bin/env bash
# bench.sh: snugd side by side with nginx and a direct client against one TLS upstream in network namespaces (root only; prints a table).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root to create network namespaces (run scripts/bench.sh as root)" >&2
	exit 1
fi
for cmd in ip unshare taskset flock; do
	command -v "$cmd" >/dev/null || { echo "bench: '$cmd' is missing (iproute2, util-linux)" >&2; exit 1; }
done
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
	echo "bench: nginx is missing (apt-get install -y nginx)" >&2
	exit 1
fi

# Two namespaces joined only to each other; nothing in the root namespace.
# snugd, nginx and the load client live in spf-cli, the upstream in spf-up.
cli=spf-cli up=spf-up
lock=/run/lock/snugd-bench.lock
[ -d /run/lock ] || lock="${TMPDIR:-/tmp}/snugd-bench.lock"
exec 9>>"$lock"
flock -w 120 9 || { echo "bench: another run holds $lock" >&2; exit 1; }

tmp=""
cleanup() {
	ip netns del "$cli" 2>/dev/null || true
	ip netns del "$up" 2>/dev/null || true
	if [ -n "$tmp" ]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT
cleanup # what a killed run left
tmp=$(mktemp -d "${TMPDIR:-/tmp}/snugd-bench.XXXXXX")

echo "bench: building" >&2
go build -o "$tmp/snugd" ./cmd/snugd
go build -o "$tmp/bench" ./scripts/bench

ip netns add "$cli"
ip netns add "$up"
ip -n "$cli" link add spf-c0 type veth peer name spf-u0 netns "$up"
ip -n "$cli" addr add 203.0.113.1/24 dev spf-c0
ip -n "$up" addr add 203.0.113.10/24 dev spf-u0
for ns in "$cli" "$up"; do ip -n "$ns" link set lo up; done
ip -n "$cli" link set spf-c0 up
ip -n "$up" link set spf-u0 up

# The harness bounds every load loop itself; the timeout is a backstop.
timeout 30m ip netns exec "$cli" "$tmp/bench" -snugd "$tmp/snugd" -dir "$tmp" -upns "$up" "$@"
