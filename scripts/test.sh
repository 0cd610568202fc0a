#!/usr/bin/env bash
# test.sh: the whole suite — format, vet, staticcheck, race tests, then the end-to-end harness.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:$(go env GOPATH)/bin"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
if ! command -v staticcheck >/dev/null; then
	go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
staticcheck ./...

echo "== go test -race"
go test -race -count=1 ./...

echo "== host SDK (node --test)"
node --test api/sdk/test/

if [ "$(id -u)" -eq 0 ]; then
	echo "== packaging"
	scripts/packaging-test.sh
fi

if [ -x scripts/e2e.sh ]; then
	echo "== end-to-end"
	scripts/e2e.sh
fi
echo "== all passed"
