#!/usr/bin/env bash
# compare-old-new.sh — renders report (text, JSON), check, diff and export (pprof,
# collapsed) of a set of traces with two heapgen binaries and compares the outputs
# byte for byte. Used once for issue 7 item 10 (sparse site series): the outputs on
# the existing fixtures must not change. Traces of real runs carry addresses, pids and
# times, so they cannot be golden files; this records them once and renders them twice.
#
#   compare-old-new.sh OLD_HEAPGEN NEW_HEAPGEN WORKDIR
#
# WORKDIR gets the compiled fixtures, the traces (recorded with OLD) and out.old/out.new.
set -euo pipefail
old="$1"; new="$2"; work="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fixtures="$here/.."
root="$(cd "$here/../../../.." && pwd)"
inc="-I$root/Sources/HeapGenTesting/include -I$root/CShim/include"
mkdir -p "$work/out.old" "$work/out.new"
cd "$work"
cc_() { cc -O2 -g -std=gnu11 -D_GNU_SOURCE $inc -o "$@" -ldl -lpthread; }
cc_ sites "$fixtures/sites.c"
cc_ gentable "$fixtures/gentable.c"
cc_ variety "$fixtures/variety.c"
cc_ warmup "$fixtures/warmup.c"
cc_ settle "$fixtures/settle.c"
cc_ leaky "$root/Tests/HeapGenDiffExportTests/Fixtures/leaky.c"
g++ -O2 -g -std=c++17 $inc -o widgets "$fixtures/widgets.cpp" -pthread
traces=()
rec() { local name="$1"; shift; "$old" record -q -o "$name.trace" -- "$@" >/dev/null; traces+=("$name.trace"); }
rec sites-leaky ./sites leaky 8
rec sites-clean ./sites clean 8
rec gentable ./gentable 6
rec variety ./variety 6
rec warmup ./warmup 8
rec settle ./settle 6
rec leaky ./leaky 2
rec widgets ./widgets 6
set +e
status=0
for bin in old new; do
    h="$old"; [ "$bin" = new ] && h="$new"
    o="out.$bin"
    for t in "${traces[@]}"; do
        b="${t%.trace}"
        "$h" report "$t" > "$o/$b.txt" 2>&1 || true
        "$h" report "$t" --format json > "$o/$b.json" 2>&1 || true
        "$h" check "$t" > "$o/$b.check" 2>&1; echo "exit $?" >> "$o/$b.check"
        "$h" check "$t" --max-live-at-exit 1 > "$o/$b.check-live" 2>&1; echo "exit $?" >> "$o/$b.check-live"
        "$h" diff "$t" --from start --to end > "$o/$b.diff" 2>&1; echo "exit $?" >> "$o/$b.diff"
        "$h" diff "$t" --from 0 --to end --format json > "$o/$b.diff-json" 2>&1; echo "exit $?" >> "$o/$b.diff-json"
        "$h" diff "$t" "$t" > "$o/$b.diff2" 2>&1; echo "exit $?" >> "$o/$b.diff2"
        "$h" export "$t" --format collapsed --sample inuse_space --at end > "$o/$b.collapsed-end" 2>&1; echo "exit $?" >> "$o/$b.collapsed-end"
        "$h" export "$t" --format collapsed > "$o/$b.collapsed" 2>&1; echo "exit $?" >> "$o/$b.collapsed"
        "$h" export "$t" --format pprof --output "$o/$b.pb.gz" > "$o/$b.export-log" 2>&1; echo "exit $?" >> "$o/$b.export-log"
    done
done
# The reports name the trace path; both runs use the same paths, so compare verbatim.
for f in out.old/*; do
    n="out.new/${f#out.old/}"
    if cmp -s "$f" "$n"; then echo "same  ${f#out.old/}"; else echo "DIFF  ${f#out.old/}"; status=1; fi
done
exit $status
