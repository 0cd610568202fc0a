#!/usr/bin/env bash
# deb.sh OUTDIR [VERSION]: build snugd's Debian package (snugd_VERSION_ARCH.deb) into OUTDIR.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: scripts/deb.sh OUTDIR [VERSION]" >&2
	exit 2
fi
out=$1
# A Debian version starts with a digit; from a checkout without one, derive
# 0.0.0~gitYYYYMMDD.REV from the last commit.
version=${2:-}
if [ -z "$version" ]; then
	version="0.0.0~git$(git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null || date -u +%Y%m%d).$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
fi
case $version in
[0-9]*) ;;
*) echo "deb.sh: version $version must start with a digit" >&2; exit 2 ;;
esac
arch=$(dpkg --print-architecture)

# Progress goes to stderr: stdout is the package's path, for scripts.
say() { echo "deb.sh: $*" >&2; }

stage=$(mktemp -d)
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT
umask 022
install -d "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/lib/systemd/system" \
	"$stage/usr/lib/systemd/user" "$stage/usr/share/doc/snugd" "$stage/usr/share/man/man1"

# mattn/go-sqlite3 needs cgo; the binary links libc dynamically (Depends: libc6).
say "building snugd $version for $arch (a minute or two when the Go build cache is cold)"
start=$SECONDS
CGO_ENABLED=1 go build -trimpath -buildvcs=auto \
	-ldflags "-s -w -X main.linkedVersion=$version" \
	-o "$stage/usr/bin/snugd" ./cmd/snugd
say "built in $((SECONDS - start)) s; staging the files"

install -m 0644 packaging/systemd/snugd.service "$stage/usr/lib/systemd/system/snugd.service"
install -m 0644 packaging/systemd/snugd-user.service "$stage/usr/lib/systemd/user/snugd.service"
install -m 0644 README.md "$stage/usr/share/doc/snugd/README.md"
install -m 0644 packaging/debian/copyright "$stage/usr/share/doc/snugd/copyright"
# The man page is generated from the help text (snugd help --man); the
# checked-in copy is kept current by cmd/snugd's TestManPageCurrent.
gzip -9n <packaging/man/snugd.1 >"$stage/usr/share/man/man1/snugd.1.gz"
rev=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
date=$(git log -1 --format=%cD 2>/dev/null || date -uR)
sed -e "s/@VERSION@/$version/" -e "s/@REVISION@/$rev/" -e "s/@DATE@/$date/" \
	packaging/debian/changelog.in | gzip -9n >"$stage/usr/share/doc/snugd/changelog.gz"
chmod 0644 "$stage/usr/share/man/man1/snugd.1.gz" "$stage/usr/share/doc/snugd/changelog.gz"
for script in postinst prerm postrm; do
	install -m 0755 "packaging/debian/$script" "$stage/DEBIAN/$script"
done
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$size/" \
	packaging/debian/control.in >"$stage/DEBIAN/control"
chmod 0644 "$stage/DEBIAN/control"

mkdir -p "$out"
deb="$out/snugd_${version}_${arch}.deb"
say "packing $(basename "$deb")"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
say "done"
echo "$deb"
