#!/usr/bin/env bash
# packaging-test.sh: build the .deb, install it in a scratch view of the machine, check what landed and that the unit verifies, purge it, check nothing is left.
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."

# Exit status: 0 passed, 1 failed, 77 skipped (the reason on the last line).
if [ "$(id -u)" -ne 0 ]; then
	echo "packaging test: skipped: it needs root to install a package (run it with sudo)"
	exit 77
fi
for tool in dpkg dpkg-deb systemd-analyze deb-systemd-helper; do
	if ! command -v "$tool" >/dev/null; then
		echo "packaging test: skipped: $tool is not installed (apt-get install dpkg systemd init-system-helpers)"
		exit 77
	fi
done

# The test installs, removes and purges the package in a scratch view of
# the machine: a private mount namespace whose /usr, /etc and /var are
# overlays on a tmpfs. What it installs, and the purge that deletes
# /var/lib/snugd, happen there only; the machine's own /var/lib/snugd (a
# root "snugd run" keeps its database and master key there) and an
# installed snugd package are never touched, and everything vanishes with
# the namespace.
if [ -z "${SNUGD_PKGTEST_SCRATCH:-}" ]; then
	if unshare -m --propagation private true 2>/dev/null && grep -qw overlay /proc/filesystems; then
		exec unshare -m --propagation private env SNUGD_PKGTEST_SCRATCH=1 "$self" "$@"
	fi
	echo "packaging test: skipped: no private mount namespace with overlayfs here, which the test needs to leave this machine's /var/lib/snugd and packages alone"
	exit 77
fi
scratch=$(mktemp -d)
mount -t tmpfs -o mode=0755 snugd-pkgtest "$scratch"
for d in usr etc var; do
	mkdir -p "$scratch/$d/upper" "$scratch/$d/work"
	mount -t overlay overlay -o "lowerdir=/$d,upperdir=$scratch/$d/upper,workdir=$scratch/$d/work" "/$d"
done
echo "-- scratch: /usr, /etc and /var are overlays on $scratch (this mount namespace only)"
# In the scratch view, start from a machine without snugd.
if dpkg-query -W -f='${Status}' snugd 2>/dev/null | grep -q 'ok installed'; then
	echo "   (this machine has a snugd package installed; purged in the scratch view only)"
	dpkg --purge snugd >/dev/null 2>&1 || true
fi
for dir in /var/lib/snugd /var/lib/private/snugd; do
	if [ -e "$dir" ] || [ -L "$dir" ]; then
		echo "   ($dir exists on this machine; hidden in the scratch view only)"
		rm -rf "$dir"
	fi
done

fail() {
	echo "packaging test: FAIL: $*" >&2
	exit 1
}

# check_mode PATH MODE: PATH exists, belongs to root:root and has MODE.
check_mode() {
	local got
	got=$(stat -c '%a %U:%G' "$1" 2>/dev/null) || fail "$1 is missing"
	[ "$got" = "$2 root:root" ] || fail "$1 is $got, want $2 root:root"
}

tmp=$(mktemp -d)
installed=
private_existed=
[ -d /var/lib/private ] && private_existed=yes
cleanup() {
	if [ -n "$installed" ]; then
		dpkg --purge snugd >/dev/null 2>&1 || true
	fi
	[ -n "$private_existed" ] || rmdir /var/lib/private 2>/dev/null || true
	rm -rf "$tmp"
	# The mount namespace ends with this process; unmount first so the
	# scratch directory itself can go.
	umount /var /etc /usr "$scratch" 2>/dev/null || umount -l /var /etc /usr "$scratch" 2>/dev/null || true
	rmdir "$scratch" 2>/dev/null || true
}
trap cleanup EXIT

version="0.0.0~test$(date -u +%Y%m%d)"
echo "-- build"
deb=$(scripts/deb.sh "$tmp/out" "$version")
[ -f "$deb" ] || fail "deb.sh made no package"
if dpkg-deb -c "$deb" | awk '{print $2}' | grep -v '^root/root$' >/dev/null; then
	fail "package holds files not owned by root/root"
fi

echo "-- install"
installed=yes
dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -i"; }
check_mode /usr/bin/snugd 755
check_mode /usr/lib/systemd/system/snugd.service 644
check_mode /usr/lib/systemd/user/snugd.service 644
check_mode /usr/share/doc/snugd/copyright 644
check_mode /usr/share/doc/snugd/changelog.gz 644
check_mode /usr/share/man/man1/snugd.1.gz 644
zcat /usr/share/man/man1/snugd.1.gz | cmp -s - packaging/man/snugd.1 || fail "the installed man page differs from packaging/man/snugd.1"
zcat /usr/share/doc/snugd/changelog.gz | grep -q "^snugd ($version) " || fail "the changelog does not name $version"
if [ ! -d /run/systemd/system ]; then
	grep -q "systemd is not running on this machine" "$tmp/dpkg.log" || { cat "$tmp/dpkg.log" >&2; fail "dpkg -i did not say it could not start the service"; }
fi
cmp -s /usr/lib/systemd/system/snugd.service packaging/systemd/snugd.service || fail "installed system unit differs from packaging/"
cmp -s /usr/lib/systemd/user/snugd.service packaging/systemd/snugd-user.service || fail "installed user unit differs from packaging/"
# deb-systemd-helper enables the unit even where systemd is not running.
[ -L /etc/systemd/system/multi-user.target.wants/snugd.service ] || fail "snugd.service is not enabled"

echo "-- verify units"
# The units name /usr/bin/snugd, which now exists: verify needs no running
# systemd. The user manager wants a runtime directory of its own.
systemd-analyze verify /usr/lib/systemd/system/snugd.service >"$tmp/verify.log" 2>&1 || { cat "$tmp/verify.log" >&2; fail "systemd-analyze verify (system unit)"; }
[ ! -s "$tmp/verify.log" ] || { cat "$tmp/verify.log" >&2; fail "systemd-analyze verify (system unit) complained"; }
mkdir -m 0700 "$tmp/run"
XDG_RUNTIME_DIR="$tmp/run" systemd-analyze --user verify /usr/lib/systemd/user/snugd.service >"$tmp/verify.log" 2>&1 || { cat "$tmp/verify.log" >&2; fail "systemd-analyze verify (user unit)"; }
[ ! -s "$tmp/verify.log" ] || { cat "$tmp/verify.log" >&2; fail "systemd-analyze verify (user unit) complained"; }
exposure=$(systemd-analyze security --offline=true /usr/lib/systemd/system/snugd.service 2>/dev/null | sed -n 's/.*Overall exposure level for snugd.service: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] || fail "systemd-analyze security gave no exposure level"
awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }' || fail "exposure level $exposure, want at most 2.0"
echo "   exposure level $exposure"

echo "-- run"
/usr/bin/snugd version | grep -qx "snugd $version" || fail "snugd version does not say $version"
/usr/bin/snugd version --json | grep -q "\"version\": \"$version\"" || fail "snugd version --json does not say $version"
for flag in --version -v; do
	/usr/bin/snugd $flag | head -n 1 | grep -qx "snugd $version" || fail "snugd $flag does not say $version"
done
/usr/bin/snugd ctl status -h | grep -q '^example:' || fail "snugd ctl status -h shows no example on stdout"
/usr/bin/snugd completion bash | bash -n || fail "snugd completion bash is not valid bash"

echo "-- reinstall"
dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -i over itself"; }
[ -L /etc/systemd/system/multi-user.target.wants/snugd.service ] || fail "snugd.service is not enabled after reinstalling"

echo "-- remove"
# What a running service would have left: its data under the DynamicUser layout.
mkdir -p -m 0700 /var/lib/private/snugd
echo '{}' >/var/lib/private/snugd/config.json
ln -sfn private/snugd /var/lib/snugd
dpkg -r snugd >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -r"; }
[ ! -e /usr/bin/snugd ] || fail "/usr/bin/snugd is left after remove"
[ -f /var/lib/snugd/config.json ] || fail "remove deleted the data directory; only purge may"

echo "-- purge"
dpkg --purge snugd >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg --purge"; }
installed=
for path in /usr/bin/snugd /usr/lib/systemd/system/snugd.service /usr/lib/systemd/user/snugd.service \
	/usr/share/doc/snugd /etc/systemd/system/multi-user.target.wants/snugd.service \
	/etc/systemd/system/snugd.service /var/lib/snugd /var/lib/private/snugd \
	/var/lib/systemd/deb-systemd-helper-enabled/snugd.service.dsh-also \
	/var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/snugd.service \
	/var/lib/systemd/deb-systemd-helper-masked/snugd.service; do
	if [ -e "$path" ] || [ -L "$path" ]; then
		fail "$path is left after purge"
	fi
done
if dpkg-query -W snugd >/dev/null 2>&1 && dpkg-query -W -f='${Status}' snugd | grep -qv 'not-installed'; then
	fail "dpkg still knows snugd: $(dpkg-query -W -f='${Status}' snugd)"
fi
echo "packaging test: ok"
