#!/usr/bin/env bash
# Measures `ratekeeper pipe --bytes` (issue 18, item 5, the targets: at
# least 1 GiB/s unthrottled, and --rate 100MiB held within 1 %). Builds the
# CLI in release, then runs RUNS rounds; each round runs, one after the
# other:
#
#   cat        head -c UNTHROTTLED /dev/zero | cat > /dev/null
#              (the machine's pipe ceiling: the same pipeline, no pacing)
#   max        head -c UNTHROTTLED /dev/zero | ratekeeper pipe --bytes --rate max > /dev/null
#   rate       head -c RATE_BYTES*SECONDS /dev/zero | ratekeeper pipe --bytes --rate RATE --json > /dev/null
#              (twice: the default --strictness 1, then --strictness 0)
#
# and prints each round's figures and the medians: GiB/s (2^30 bytes a
# second) by the wall clock for cat and max; for rate, the wall-clock rate
# and its error against RATE, and the report's achieved rate (bytes over the
# schedule's elapsed, see pipe --help) and its error. The wall clock counts
# from before head starts until the pipeline ends (process start-up
# included: about 1 ms in 4 s).
#
# Usage:
#   scripts/bench-pipe.sh                     # 5 rounds, 4 GiB, 100MiB for 4 s
#   RUNS=3 UNTHROTTLED=1073741824 SECONDS_AT_RATE=3 scripts/bench-pipe.sh
#   NO_BUILD=1 BIN=path/to/ratekeeper scripts/bench-pipe.sh
#
# Needs bash, GNU coreutils (head -c, date +%s%N), awk, and python3 for the
# JSON report. Run it on an otherwise idle machine: every figure is one
# wall-clock run.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${RUNS:-5}"
unthrottled="${UNTHROTTLED:-4294967296}"
rate="${RATE:-100MiB}"
rate_bytes="${RATE_BYTES:-104857600}"
seconds="${SECONDS_AT_RATE:-4}"
bin="${BIN:-target/release/ratekeeper}"

if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p ratekeeper-cli >&2
fi

now() { date +%s%N; }
# GiB/s of $1 bytes in $2 ns.
gibps() { awk -v b="$1" -v ns="$2" 'BEGIN { printf "%.3f", b / (ns / 1e9) / 1073741824 }'; }
# The median of the arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); if (NR % 2) print v[m]; else printf "%.4f\n", (v[m] + v[m + 1]) / 2 }'; }

total=$((rate_bytes * seconds))
report=$(mktemp)
trap 'rm -f "$report"' EXIT

# Runs --rate RATE with --strictness $1 and prints "wall-MiB/s wall-error%
# report-MiB/s report-error%".
at_rate() {
  local t ns achieved
  t=$(now)
  head -c "$total" /dev/zero | "$bin" pipe --bytes --rate "$rate" --strictness "$1" --json > /dev/null 2> "$report"
  ns=$(($(now) - t))
  achieved=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["achieved_rate"])' "$report")
  awk -v b="$total" -v ns="$ns" -v r="$rate_bytes" -v a="$achieved" 'BEGIN {
    w = b / (ns / 1e9)
    printf "%.3f %+.3f %.3f %+.3f\n", w / 1048576, (w / r - 1) * 100, a / 1048576, (a / r - 1) * 100
  }'
}

echo "machine: $(lscpu | awk -F': *' '/^Model name/ { print $2; exit }'), $(nproc) CPUs; $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary:  $bin ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ', modified'))"
echo "rounds:  $runs; unthrottled $unthrottled bytes; --rate $rate ($rate_bytes bytes/s) for $total bytes"
echo "rate: wall-clock MiB/s and error; report: the JSON achieved rate and error; strict: the"
echo "default --strictness 1; avg: --strictness 0 (time lost to a late wake-up is made up)"
row() { printf '%-6s %9s %9s | %9s %8s %9s %8s | %9s %8s\n' "$@"; }
row round "cat GiB/s" "max GiB/s" "strict" "error %" "report" "error %" "avg rep." "error %"
cols=(cats maxes walls werrs reps rerrs areps aerrs)
for c in "${cols[@]}"; do eval "$c=()"; done
for i in $(seq "$runs"); do
  t=$(now); head -c "$unthrottled" /dev/zero | cat > /dev/null; cat_ns=$(($(now) - t))
  t=$(now); head -c "$unthrottled" /dev/zero | "$bin" pipe --bytes --rate max > /dev/null; max_ns=$(($(now) - t))
  read -r wall werr rep rerr <<< "$(at_rate 1)"
  read -r _ _ arep aerr <<< "$(at_rate 0)"
  vals=("$(gibps "$unthrottled" "$cat_ns")" "$(gibps "$unthrottled" "$max_ns")" "$wall" "$werr" "$rep" "$rerr" "$arep" "$aerr")
  for k in "${!cols[@]}"; do eval "${cols[$k]}+=(\"\${vals[$k]}\")"; done
  row "$i" "${vals[@]}"
done
meds=()
for c in "${cols[@]}"; do eval "meds+=(\"\$(median \"\${$c[@]}\")\")"; done
row median "${meds[@]}"
