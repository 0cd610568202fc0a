#!/usr/bin/env bash
# e2e.sh: the end-to-end harness — the real snugd, its clients and TLS upstreams in network namespaces of its own (root only).
set -euo pipefail
cd "$(dirname "$0")/.."

# Exit status: 0 passed, 1 failed, 77 skipped (the reason on the last line).
if [ "$(id -u)" -ne 0 ]; then
	echo "e2e: skipped: the harness needs root to create network namespaces (run sudo scripts/e2e.sh)"
	exit 77
fi
if ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
	echo "e2e: skipped: 'ip netns' is not available (install iproute2)"
	exit 77
fi
if ! command -v unshare >/dev/null || ! command -v flock >/dev/null; then
	echo "e2e: skipped: 'unshare' or 'flock' is not available (install util-linux)"
	exit 77
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
		# Deleting a namespace takes its veth ends with it; the harness puts
		# nothing in the machine's own namespace.
		for ns in snugd-e2e-pub snugd-e2e-priv snugd-e2e-cli snugd-e2e-ln snugd-e2e-op; do ip netns del "$ns" 2>/dev/null || true; done
	) 9>>"$lock" || true
}
trap cleanup EXIT

# The harness bounds itself (about 20 s after the build); the timeout is a backstop.
echo "e2e: building the harness and snugd, then running it (a minute or two when the Go build cache is cold)"
go test -tags e2e -count=1 -timeout 8m ./scripts/e2e/ "$@"
