#!/usr/bin/env bash
# Compares two builds of `ratekeeper pipe --bytes --rate max` beside `cat`,
# alternating in one run so that both see the same machine: each round
# runs `head -c N /dev/zero | X > /dev/null` for X = cat, OLD, NEW and
# prints the GiB/s (2^30 bytes a second) of each by the wall clock.
#
# Usage:
#   scripts/pipe-ab.sh OLD-BINARY NEW-BINARY
#   RUNS=7 N=4294967296 scripts/pipe-ab.sh devbin/ratekeeper_old devbin/ratekeeper
#
# Needs bash, GNU coreutils (head -c, date +%s%N) and awk.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 OLD-BINARY NEW-BINARY" >&2
  exit 2
fi
n="${N:-4294967296}"
echo "round cat old new (GiB/s of $n bytes)"
for i in $(seq "${RUNS:-5}"); do
  line="$i"
  for c in "cat" "$1 pipe --bytes --rate max" "$2 pipe --bytes --rate max"; do
    t=$(date +%s%N)
    # shellcheck disable=SC2086 # the command and its arguments
    head -c "$n" /dev/zero | $c > /dev/null
    ns=$(($(date +%s%N) - t))
    line="$line $(awk -v b="$n" -v ns="$ns" 'BEGIN { printf "%.3f", b / (ns / 1e9) / 1073741824 }')"
  done
  echo "$line"
done
