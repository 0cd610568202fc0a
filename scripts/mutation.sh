#!/usr/bin/env bash
# mutation.sh [PKG…]: mutation-test the security-critical packages with gremlins and print each one's test efficacy, known equivalent mutants set aside.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Each package in scripts/mutation/packages (or each PKG given) is run on
# its own: gremlins mutates the package's non-test files one token at a
# time and runs that package's tests against each mutant. A mutant the
# tests kill is good; one that lives is a change no test notices. A
# survivor listed in scripts/mutation/equivalent (a mutant that cannot
# change behaviour, with the reason) is set aside, so a run shows only new
# survivors, each printed in the equivalents file's format.
#
# Efficacy is killed / (killed + lived − equivalent). Mutants on lines no
# test runs ("not covered") and mutants that hang the tests ("timed out")
# are counted apart, as gremlins counts them. The exit status is 0 only
# when every package reached MUTATION_MIN percent.
gremlins=github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
workers=${MUTATION_WORKERS:-1}
coefficient=${MUTATION_TIMEOUT_COEFFICIENT:-5}
min=${MUTATION_MIN:-95}
pkgfile=scripts/mutation/packages
eqfile=scripts/mutation/equivalent
export LC_ALL=C NO_COLOR=1

usage() {
	echo "usage: scripts/mutation.sh [PKG…]   (PKG as in $pkgfile, e.g. transports or daemon/scrub)" >&2
	echo "environment: MUTATION_WORKERS (default 1), MUTATION_TIMEOUT_COEFFICIENT (default 5), MUTATION_MIN (default 95)" >&2
	exit 2
}
case "${1:-}" in -h | --help) usage ;; esac
command -v go >/dev/null || { echo "mutation: go is not on PATH" >&2; exit 1; }

# The package list: "PKG [FILE…] [+ TESTPKG…]" per line. FILEs, when
# given, are the only files of PKG mutated. TESTPKGs are packages whose
# tests count too: most of the executor's tests are in the composite
# package daemon, which reaches its parts' unexported state, so a run of
# daemon/fetch's own tests alone would see nearly every mutant uncovered.
declare -A files=() tests=()
listed=()
while read -r pkg rest; do
	case "$pkg" in '' | '#'*) continue ;; esac
	listed+=("$pkg")
	files[$pkg]=${rest%%+*}
	tests[$pkg]=""
	case "$rest" in *+*) tests[$pkg]=${rest#*+} ;; esac
done <"$pkgfile"
if [ $# -eq 0 ]; then
	set -- "${listed[@]}"
fi
for pkg in "$@"; do
	pkg=${pkg#./}
	pkg=${pkg%/}
	[ -d "$pkg" ] || { echo "mutation: no package folder $pkg" >&2; exit 2; }
done

# The equivalents: each entry is one line, "FILE TYPE: CODE" with the
# mutated token of CODE in «», and the reason on the "#" lines right above
# it. An entry without a reason is an error: an unexplained entry would
# hide a real survivor.
declare -A equivalent=()
reason=""
n=0
while IFS= read -r line; do
	n=$((n + 1))
	case "$line" in
	'#'*) reason+=${line#\#} ;;
	'') reason="" ;;
	*)
		if [ -z "${reason// /}" ]; then
			echo "mutation: $eqfile:$n: an entry needs its reason on the # lines above it" >&2
			exit 1
		fi
		equivalent[$line]=0
		;;
	esac
done <"$eqfile"

# Run on a snapshot of the work tree (uncommitted changes included), so
# an edit made during the run changes neither the coverage nor a mutant.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/snugd-mutation.XXXXXX")
snap=$tmp/src
trap 'rm -rf "$snap" "$tmp/trim" "$tmp/bin" "$tmp"/select-*/*.test "$tmp"/select-*/index' EXIT
mkdir "$snap"
tar -C "$root" --exclude=./.git -cf - . | tar -C "$snap" -xf -
echo "mutation: logs in $tmp"

# gremlins is built once, not run with go run: go run puts GOROOT/bin
# first on its child's PATH, which would hide the wrapper "go" below.
GOBIN=$tmp/bin go install "$gremlins"

optoken='^([-+*/%<>=!&|^]+)'
# key prints the equivalents-file line for the mutant of TYPE at
# FILE:LINE:COL: the source line trimmed, its token at COL in «».
key() {
	local file=$1 type=$2 line=$3 col=$4 src pre rest tok
	src=$(sed -n "${line}p" "$snap/$file")
	pre=${src:0:col-1}
	rest=${src:col-1}
	tok=""
	if [[ $rest =~ $optoken ]]; then
		tok=${BASH_REMATCH[1]}
	fi
	src="$pre«$tok»${rest:${#tok}}"
	src=${src#"${src%%[![:space:]]*}"}
	src=${src%"${src##*[![:space:]]}"}
	printf '%s %s: %s\n' "$file" "$type" "$src"
}

# select_tests PKG SRC MOD: for a row with TESTPKGs, which tests each
# mutant runs. A test that never executes a statement can change nothing
# a mutant of that statement does, so it cannot kill the mutant: leaving
# it out loses no kill, it only saves its time. (gremlins reasons the
# same way when it calls a mutant on a line no test runs "not covered".)
# So each test package of the row is built once with -coverpkg=PKG, each
# of its top-level tests (fuzz seeds and examples too) runs alone with a
# coverage profile, and the blocks of PKG's mutated files it executed go
# into an index. Every test that executes any of them is kept, however
# slow; none is dropped for touching PKG only in passing. A wrapper "go"
# ahead on PATH then gives gremlins' coverage run the tests that cover
# PKG at all, and each mutant's run only the tests whose executed blocks
# hold a line the mutant changed (gremlins rewrites the whole file, so
# the lines are found with diff -w against the snapshot). When a mutant's
# lines cannot be found, its run gets every test that covers PKG. A test
# that fails when run alone stops the run: it would fail every mutant's.
select_tests() {
	local pkg=$1 src=$2 mod=$3 sel=$tmp/select-${1//\//_} tp bin t n=0 kept=0 mfiles="" f
	rm -rf "$sel"
	mkdir -p "$sel/bin"
	for f in "$src/$pkg"/*.go; do
		f=${f##*/}
		case "$f" in *_test.go) continue ;; esac
		if [ -z "${files[$pkg]// /}" ] || [[ " ${files[$pkg]} " == *" $f "* ]]; then
			mfiles+="$f "
		fi
	done
	: >"$sel/index"
	for tp in $pkg ${tests[$pkg]}; do
		bin=$sel/${tp//\//_}.test
		(cd "$src" && nice go test -c -o "$bin" -coverpkg "$mod/$pkg" "./$tp") >>"$sel/build.log" 2>&1 || {
			tail -n 20 "$sel/build.log" >&2
			echo "mutation: go test -c ./$tp failed" >&2
			exit 1
		}
		[ -x "$bin" ] || continue # no test files
		for t in $(cd "$src/$tp" && "$bin" -test.list '.*' 2>/dev/null); do
			n=$((n + 1))
			if ! (cd "$src/$tp" && /usr/bin/time -f '%U %S' -o "$sel/cpu" nice "$bin" -test.run "^$t\$" -test.count=1 -test.coverprofile "$sel/one.cov") >"$sel/one.out" 2>&1; then
				tail -n 20 "$sel/one.out" >&2
				echo "mutation: $tp's $t fails when run alone; every mutant would seem killed" >&2
				exit 1
			fi
			awk -v t="$t" -v p="$mod/$pkg/" -v fs=" $mfiles" '
				NR > 1 && $NF > 0 && index($1, p) == 1 {
					split(substr($1, length(p) + 1), a, ":")
					if (index(fs, " " a[1] " ") == 0) next
					split(a[2], r, ",")
					split(r[1], s, "."); split(r[2], e, ".")
					print t, a[1], s[1], e[1]
				}' "$sel/one.cov" >>"$sel/index"
			if grep -q "^$t " "$sel/index"; then
				kept=$((kept + 1))
				awk -v t="$t" '{ printf "%s %.2f\n", t, $1 + $2 }' "$sel/cpu" >>"$sel/cpu.txt"
			fi
		done
	done
	cut -d' ' -f1 "$sel/index" | sort -u >"$sel/tests"
	[ -s "$sel/tests" ] || { echo "mutation: no test of $pkg's row executes $pkg" >&2; exit 1; }
	echo "mutation: $kept of $n top-level tests of $pkg$(printf " %s" ${tests[$pkg]}) execute $pkg's mutated files"
	cat >"$sel/bin/go" <<-'WRAP'
		#!/usr/bin/env bash
		# go, as scripts/mutation.sh's wrapper: a go test run of gremlins
		# gets -run with the tests that can kill the mutant (see there).
		set -u
		real=$MUTATION_REAL_GO
		[ "${1:-}" = test ] || exec "$real" "$@"
		sel=$MUTATION_SELECT
		run=$(paste -sd'|' "$sel/tests")
		if [[ " $* " == *" -failfast "* ]]; then
			picked=$(for f in $MUTATION_FILES; do
				cmp -s "$MUTATION_SRC/$MUTATION_PKG/$f" "$MUTATION_PKG/$f" && continue
				diff -w "$MUTATION_SRC/$MUTATION_PKG/$f" "$MUTATION_PKG/$f" |
					sed -n -E 's/^([0-9]+)(,([0-9]+))?[acd].*$/\1 \3/p' |
					while read -r a b; do
						awk -v f="$f" -v a="$a" -v b="${b:-$a}" '$2 == f && $3 <= b && $4 >= a { print $1 }' "$sel/index"
					done
			done | sort -u)
			where=$(for f in $MUTATION_FILES; do cmp -s "$MUTATION_SRC/$MUTATION_PKG/$f" "$MUTATION_PKG/$f" || echo "$f"; done | paste -sd' ')
			if [ -n "$picked" ]; then
				run=$(paste -sd'|' <<<"$picked")
				echo "$where $(wc -l <<<"$picked") $(awk 'NR == FNR { p[$1]; next } $1 in p { s += $2 } END { printf "%.1f", s }' <(echo "$picked") "$sel/cpu.txt")" >>"$sel/mutants"
			else
				echo "$where all" >>"$sel/mutants"
			fi
		fi
		exec "$real" test "-run=^($run)\$" "${@:2}"
	WRAP
	chmod +x "$sel/bin/go"
	genv=(PATH="$sel/bin:$PATH" MUTATION_REAL_GO="$(command -v go)" MUTATION_SELECT="$sel"
		MUTATION_SRC="$snap" MUTATION_PKG="$pkg" MUTATION_FILES="$mfiles")
}

summary=()
status=0
for pkg in "$@"; do
	pkg=${pkg#./}
	pkg=${pkg%/}
	log=$tmp/${pkg//\//_}.log
	echo "== $pkg"
	# Subpackages are packages of their own: mutate only this folder's
	# files, and of those only the listed ones when the list names some.
	excl=(-E /)
	if [ -n "${files[$pkg]:-}" ]; then
		for f in "$snap/$pkg"/*.go; do
			f=${f##*/}
			case " ${files[$pkg]} " in *" $f "*) ;; *) excl+=(-E "^${f//./\\.}\$") ;; esac
		done
	fi
	start=$SECONDS
	# A row with TESTPKGs runs in gremlins' integration mode, whose every
	# test run is "go test ./..." at the module root, with -coverpkg so the
	# coverage of PKG counts every test package's runs. The whole module's
	# tests would take hours per mutant, so the run gets a copy of the
	# snapshot trimmed to what PKG's and the TESTPKGs' tests build: the Go
	# files of every other package go, and so do the test files of every
	# package but those. "./..." then runs exactly those tests.
	src=$snap
	mode=()
	genv=(MUTATION_NONE=)
	if [ -n "${tests[$pkg]:-}" ]; then
		src=$tmp/trim
		rm -rf "$src"
		cp -a "$snap" "$src"
		mod=$(sed -n 's/^module //p' "$src/go.mod")
		keep=" $pkg ${tests[$pkg]} "
		declare -A need=()
		while read -r p; do
			need[$p]=1
		done < <(cd "$src" && go list -deps -test "./$pkg" $(printf './%s ' ${tests[$pkg]}) |
			sed -n -E "s#^$mod(/[^ ]*)?( .*)?\$#\1#p" | sed -E 's#^/##; s#\.test$##; s#^$#.#' | sort -u)
		while read -r d; do
			d=${d#./}
			d=${d:-.}
			if [ -z "${need[$d]+set}" ]; then
				find "$src/$d" -maxdepth 1 -name '*.go' -delete
			elif [[ $keep != *" $d "* ]]; then
				find "$src/$d" -maxdepth 1 -name '*_test.go' -delete
			fi
		done < <(cd "$src" && find . -name '*.go' -printf '%h\n' | sort -u)
		unset need
		mode=(--integration --coverpkg "$mod/$pkg")
		select_tests "$pkg" "$src" "$mod"
	fi
	# Every mutant is a build, and the link dominates it: no DWARF
	# (-ldflags=-w) saves about a sixth, and no inlining out of PKG
	# (-gcflags=PKG=-l) keeps a mutated body out of its importers' export
	# data, so they are not recompiled for it (about another sixth for
	# the daemon rows). Neither changes what a test can observe.
	flags="-ldflags=-w -gcflags=$(sed -n 's/^module //p' "$src/go.mod")/$pkg=-l"
	if ! (cd "$src" && export "${genv[@]}" GOFLAGS="${GOFLAGS:+$GOFLAGS }$flags" && nice "$tmp/bin/gremlins" unleash --workers "$workers" --timeout-coefficient "$coefficient" "${mode[@]}" "${excl[@]}" "$src/$pkg") >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		summary+=("FAILED   $pkg: gremlins did not finish (log $log)")
		status=1
		continue
	fi
	killed=0 lived=0 equiv=0 timedout=0 notcovered=0 notviable=0
	while read -r st type _ pos; do
		case "$st" in
		KILLED) killed=$((killed + 1)) ;;
		TIMED-OUT) timedout=$((timedout + 1)) ;;
		NOT-COVERED) notcovered=$((notcovered + 1)) ;;
		NOT-VIABLE) notviable=$((notviable + 1)) ;;
		LIVED)
			lived=$((lived + 1))
			IFS=: read -r file line col <<<"$pos"
			k=$(key "$pkg/$file" "$type" "$line" "$col")
			if [ -n "${equivalent[$k]+set}" ]; then
				equiv=$((equiv + 1))
				equivalent[$k]=1
			else
				echo "new survivor at $pkg/$file:$line:$col, as an equivalents entry:"
				echo "    $k"
			fi
			;;
		esac
	done < <(sed -n -E 's/^ *(KILLED|LIVED|TIMED OUT|NOT COVERED|NOT VIABLE) ([A-Z_]+) at (.*)$/\1 \2 at \3/p' "$log" | sed -E 's/^(TIMED|NOT) (OUT|COVERED|VIABLE)/\1-\2/')
	for k in "${!equivalent[@]}"; do
		if [ "${equivalent[$k]}" = 0 ] && [[ $k == "$pkg/"* ]] && [[ ${k%% *} != "$pkg/"*/* ]]; then
			echo "stale equivalents entry (no such survivor now): $k"
		fi
	done
	tested=$((killed + lived - equiv))
	efficacy=$(awk -v k="$killed" -v t="$tested" 'BEGIN { if (t == 0) print "n/a"; else printf "%.2f", 100 * k / t }')
	line="$pkg: efficacy $efficacy% (killed $killed, lived $lived of which $equiv equivalent, timed out $timedout, not covered $notcovered, not viable $notviable; $((SECONDS - start)) s)"
	echo "$line"
	sel=$tmp/select-${pkg//\//_}
	if [ -s "$sel/mutants" ]; then
		awk -v all="$(wc -l <"$sel/tests")" -v cpu="$(awk '{ s += $2 } END { printf "%.1f", s }' "$sel/cpu.txt")" '
			$2 == "all" { w++; t += all; c += cpu; next }
			{ n++; t += $2; c += $3 }
			END { printf "mutation: %d mutant runs took %.1f of the %d covering tests on average, %.1f s of their CPU alone (all: %s s); %d ran them all\n", n + w, t / (n + w), all, c / (n + w), cpu, w }' "$sel/mutants"
	fi
	if [ "$efficacy" = n/a ] || awk -v e="$efficacy" -v m="$min" 'BEGIN { exit !(e < m) }'; then
		summary+=("BELOW    $line")
		status=1
	else
		summary+=("ok       $line")
	fi
done

echo "== summary (at least $min% wanted)"
printf '%s\n' "${summary[@]}"
exit "$status"
