#!/usr/bin/env bash
# soak.sh: the real snugd under mixed load (50 req/s of /v1/net, reads, writers) for a duration (default 1h) in network namespaces, sampled every 30 s (root only).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-1h}
shift || true
if ! [[ "$duration" =~ ^[0-9]+(s|m|h)$ ]]; then
	echo "usage: scripts/soak.sh [DURATION] [bench soak flags…]   (DURATION: 5m, 1h; default 1h)" >&2
	exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "soak: needs root to create network namespaces (run scripts/soak.sh as root)" >&2
	exit 1
fi
for cmd in ip unshare taskset; do
	command -v "$cmd" >/dev/null || { echo "soak: '$cmd' is missing (iproute2, util-linux)" >&2; exit 1; }
done

# Two namespaces of this run's own, named after its pid (other runs and
# other harnesses share the machine), joined only to each other: snugd and
# the load client in the first, the upstream on a documentation address in
# the second. Nothing is added to the machine's own namespace.
cli="snsoak-c$$" up="snsoak-u$$"
cli_link="sk$$c" up_link="sk$$u"
for ns in "$cli" "$up"; do
	if ip netns list | grep -qw "$ns"; then
		echo "soak: network namespace $ns already exists" >&2
		exit 1
	fi
done
tmp=""
cleanup() {
	ip netns del "$cli" 2>/dev/null || true
	ip netns del "$up" 2>/dev/null || true
	if [ -n "$tmp" ]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT
tmp=$(mktemp -d "${TMPDIR:-/tmp}/snugd-soak.XXXXXX")

echo "soak: building" >&2
go build -o "$tmp/snugd" ./cmd/snugd
go build -o "$tmp/bench" ./scripts/bench

ip netns add "$cli"
ip netns add "$up"
ip -n "$cli" link add "$cli_link" type veth peer name "$up_link" netns "$up"
ip -n "$cli" addr add 203.0.113.1/24 dev "$cli_link"
ip -n "$up" addr add 203.0.113.10/24 dev "$up_link"
for ns in "$cli" "$up"; do ip -n "$ns" link set lo up; done
ip -n "$cli" link set "$cli_link" up
ip -n "$up" link set "$up_link" up

# The load stops by itself after the duration; the timeout is a backstop.
case "${duration: -1}" in
s) unit=1 ;;
m) unit=60 ;;
*) unit=3600 ;;
esac
secs=$((${duration%?} * unit))
echo "soak: running for $duration" >&2
timeout $((secs + 300)) ip netns exec "$cli" "$tmp/bench" soak -snugd "$tmp/snugd" -dir "$tmp" -upns "$up" -duration "$duration" "$@"
