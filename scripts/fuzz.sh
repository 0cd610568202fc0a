#!/usr/bin/env bash
# fuzz.sh: run every fuzz target in the module for a given time each (default 30s), one at a time, and keep new coverage in testdata/fuzz.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."

usage() {
	echo "usage: scripts/fuzz.sh [DURATION] [PATTERN]" >&2
	echo "       scripts/fuzz.sh --report [GOAL]" >&2
	echo "       scripts/fuzz.sh --top-up [GOAL]" >&2
	echo "  DURATION  go test -fuzztime for each target (30s, 10m, 1h, or 5000x); default 30s" >&2
	echo "  PATTERN   only targets whose package/Name matches this extended regexp" >&2
	echo "  --report  the CPU-hours the ledger holds per parser of outside input, against GOAL" >&2
	echo "  --top-up  fuzz each parser of outside input until the ledger holds GOAL (default 1h) for it" >&2
	exit 2
}
case "${1:-}" in -h | --help) usage ;; esac

ledger=scripts/fuzz/ledger.tsv
parsers=scripts/fuzz/parsers

# seconds turns 90s, 30m or 1h into seconds.
seconds() {
	if ! [[ "$1" =~ ^([0-9]+)(s|m|h)$ ]]; then
		echo "fuzz: $1 is not a duration (90s, 30m, 1h)" >&2
		exit 2
	fi
	case "${BASH_REMATCH[2]}" in
	s) echo "${BASH_REMATCH[1]}" ;;
	m) echo $((BASH_REMATCH[1] * 60)) ;;
	h) echo $((BASH_REMATCH[1] * 3600)) ;;
	esac
}

# had prints the CPU seconds the ledger holds for the targets given.
had() {
	[ -f "$ledger" ] || { echo 0; return; }
	awk -F '\t' -v list=" $* " '!/^#/ && index(list, " " $2 " ") { s += $3 } END { printf "%d", s }' "$ledger"
}

# report prints each parser of outside input (scripts/fuzz/parsers) with
# the CPU-hours its targets have had and what it still owes of goal.
report() {
	local goal=$1 short=0 name targets have
	printf '%-24s %8s %8s  %s\n' parser cpu-h owed-h targets
	while IFS=$'\t' read -r name targets; do
		case "$name" in '#'* | '') continue ;; esac
		# shellcheck disable=SC2086 # targets is a space-separated list
		have=$(had $targets)
		local owe=$((goal - have))
		[ "$owe" -gt 0 ] || owe=0
		[ "$owe" -eq 0 ] || short=$((short + 1))
		awk -v n="$name" -v h="$have" -v o="$owe" -v t="$targets" 'BEGIN { printf "%-24s %8.2f %8.2f  %s\n", n, h / 3600, o / 3600, t }'
	done <"$parsers"
	if [ "$short" -ne 0 ]; then
		echo "fuzz: $short parsers have had less than $((goal / 60)) CPU-minutes" >&2
		return 1
	fi
}

case "${1:-}" in
--report)
	[ "$#" -le 2 ] || usage
	goal=$(seconds "${2:-1h}")
	report "$goal"
	exit
	;;
--top-up)
	# Each parser's first target runs until the ledger holds goal for
	# the parser: a run of the owed CPU spread over the cores, then
	# another if the cores were shared, one at a time.
	[ "$#" -le 2 ] || usage
	goal=$(seconds "${2:-1h}")
	while IFS=$'\t' read -r name targets; do
		case "$name" in '#'* | '') continue ;; esac
		# shellcheck disable=SC2086 # targets is a space-separated list
		while have=$(had $targets) && [ "$have" -lt "$goal" ]; do
			first=${targets%% *}
			wall=$(((goal - have + $(nproc) - 1) / $(nproc)))
			[ "$wall" -ge 60 ] || wall=60
			echo "fuzz: $name: $((have / 60)) of $((goal / 60)) CPU-minutes; $first for ${wall}s"
			"$self" "${wall}s" "^${first}\$" </dev/null
			# shellcheck disable=SC2086
			if [ "$(had $targets)" -le "$have" ]; then
				echo "fuzz: $first added no CPU time to the ledger" >&2
				exit 1
			fi
		done
	done <"$parsers"
	report "$goal"
	exit
	;;
esac
fuzztime=${1:-30s}
pattern=${2:-}
[ "$#" -le 2 ] || usage
if ! [[ "$fuzztime" =~ ^[0-9]+(ns|us|ms|s|m|h|x)$ ]]; then
	echo "fuzz: $fuzztime is not a duration (30s, 10m, 1h) or a count (5000x)" >&2
	exit 2
fi

# The fuzz targets, as "dir Name": every func FuzzX(f *testing.F) in a
# _test.go file of the module.
mapfile -t targets < <(
	grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
		sed -E 's#^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' |
		sort -u
)
if [ -n "$pattern" ]; then
	mapfile -t targets < <(printf '%s\n' "${targets[@]}" | awk -v re="$pattern" '{ if (($1 "/" $2) ~ re) print }')
fi
if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz: no fuzz target matches" >&2
	exit 1
fi

# Every run appends a row per target to the ledger (when, target, CPU
# seconds, execs, new corpus entries, crashers), checked in beside the
# corpus, so the hours a parser has been fuzzed add up across runs.
mkdir -p scripts/fuzz
[ -f "$ledger" ] || printf '# at\ttarget\tcpu_seconds\texecs\tnew_corpus\tcrashers\n' >"$ledger"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A test binary per package, built once with the fuzzing instrumentation.
# The table's corpus column counts the files testdata/fuzz/FuzzX held
# before the run (the seeds f.Add gives come on top).
declare -A built=()
rows=()
total_execs=0 total_new=0 total_crash=0 failed=0
echo "fuzz: ${#targets[@]} targets, $fuzztime each, one at a time"
for t in "${targets[@]}"; do
	dir=${t% *} name=${t#* }
	bin="$work/$(echo "$dir" | tr / _).test"
	if [ -z "${built[$dir]:-}" ]; then
		# -fuzz needs a single package and turns on the coverage
		# instrumentation the fuzzer steers by.
		built[$dir]=ok
		if ! go test -c -o "$bin" -fuzz="^${name}\$" "./$dir" >"$work/build.log" 2>&1; then
			cat "$work/build.log" >&2
			echo "fuzz: building ./$dir failed" >&2
			built[$dir]=failed
		fi
	fi
	if [ "${built[$dir]}" = failed ]; then
		rows+=("$(printf '%-32s %-28s %12s %7s %5s %5s %8s' "$dir" "$name" "-" "-" "-" "-" "no build")")
		failed=$((failed + 1))
		continue
	fi
	cachedir="$work/cache/$dir" # the fuzzer keeps its finds in $cachedir/$name
	cache="$cachedir/$name"
	mkdir -p "$cachedir"
	corpus="$dir/testdata/fuzz/$name"
	before=0
	if [ -d "$corpus" ]; then before=$(find "$corpus" -type f | wc -l); fi
	log="$work/$name.log"
	rc=0
	# The binary runs in its package directory, as go test runs it, so
	# it finds testdata/fuzz. The cache directory starts empty: every
	# input the fuzzer keeps there widened coverage beyond the seeds.
	# The subshell's `times` gives the CPU the binary and its fuzzing
	# workers used (each is waited for, so their use adds up).
	(
		cd "$dir" || exit 1
		r=0
		"$bin" -test.run='^$' -test.fuzz="^${name}\$" -test.fuzztime="$fuzztime" \
			-test.fuzzcachedir="$cachedir" -test.parallel="$(nproc)" >"$log" 2>&1 || r=$?
		times >"$work/times"
		exit "$r"
	) || rc=$?
	cpu=$(tail -n 1 "$work/times" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] } printf "%d", t }')
	execs=$(grep -Eo 'execs: [0-9]+' "$log" | tail -n 1 | grep -Eo '[0-9]+' || echo 0)
	new=0
	for f in "$cache"/*; do
		[ -f "$f" ] || continue
		mkdir -p "$corpus"
		if [ ! -e "$corpus/$(basename "$f")" ]; then
			cp "$f" "$corpus/"
			new=$((new + 1))
		fi
	done
	crash=0
	if [ "$rc" -ne 0 ]; then
		crash=$(grep -c 'Failing input written to' "$log" || true)
		if [ "$crash" -eq 0 ]; then crash="?"; fi
		failed=$((failed + 1))
		echo "fuzz: $dir $name failed (exit $rc):" >&2
		tail -n 30 "$log" >&2
	fi
	rows+=("$(printf '%-32s %-28s %12s %7s %5s %5s %8s' "$dir" "$name" "$execs" "$cpu" "$before" "$new" "$crash")")
	printf '%s\t%s/%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$dir" "$name" "$cpu" "$execs" "$new" "$crash" >>"$ledger"
	total_execs=$((total_execs + execs))
	total_new=$((total_new + new))
	if [ "$crash" != "?" ]; then total_crash=$((total_crash + crash)); fi
	echo "fuzz: $dir $name: $execs execs, $new new corpus entries, crashers $crash"
done

echo
printf '%-32s %-28s %12s %7s %5s %5s %8s\n' package target execs cpu-s corpus new crashers
printf '%s\n' "${rows[@]}"
printf '%-32s %-28s %12s %7s %5s %5s %8s\n' total "${#targets[@]} targets" "$total_execs" "" "" "$total_new" "$total_crash"

# The ledger's sum per target: the CPU every run has given it so far.
echo
echo "CPU-hours so far per target (all runs in $ledger):"
awk -F '\t' '!/^#/ { cpu[$2] += $3; execs[$2] += $4 } END { for (t in cpu) printf "  %-56s %6.2f h %14d execs\n", t, cpu[t] / 3600, execs[t] }' "$ledger" | sort
echo
report 3600 || true
if [ "$failed" -ne 0 ]; then
	echo "fuzz: $failed targets failed (a crasher's input is in its testdata/fuzz directory)" >&2
	exit 1
fi
if [ "$total_new" -gt 0 ]; then
	echo "fuzz: $total_new new corpus entries under */testdata/fuzz: review and commit them"
fi
