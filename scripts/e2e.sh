#!/usr/bin/env bash
# e2e.sh: the end-to-end harness — the real snugd against TLS upstreams in network namespaces (root only).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "e2e: skipped: the harness needs root to create network namespaces (run scripts/e2e.sh as root)"
	exit 0
fi
if ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
	echo "e2e: skipped: 'ip netns' is not available (install iproute2)"
	exit 0
fi
if ! command -v unshare >/dev/null || ! command -v flock >/dev/null; then
	echo "e2e: skipped: 'unshare' or 'flock' is not available (install util-linux)"
	exit 0
fi

# The harness removes its namespaces itself, before and after a run; this
# trap covers a run that go test's timeout killed before its cleanup. The
# harness holds this lock while it runs (scripts/e2e/netns_test.go), so
# the trap removes nothing once another run has taken over the names.
lock=/run/lock/snugd-e2e.lock
[ -d /run/lock ] || lock="${TMPDIR:-/tmp}/snugd-e2e.lock"
cleanup() {
	(
		flock -n 9 || exit 0
		for ns in snugd-e2e-pub snugd-e2e-priv; do ip netns del "$ns" 2>/dev/null || true; done
		for link in se2e-pub0 se2e-prv0; do ip link del "$link" 2>/dev/null || true; done
	) 9>>"$lock" || true
}
trap cleanup EXIT

# The harness bounds itself (about 10 s after the build); the timeout is a backstop.
go test -tags e2e -count=1 -timeout 5m ./scripts/e2e/ "$@"
