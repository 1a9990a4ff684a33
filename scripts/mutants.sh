#!/usr/bin/env bash
# Mutation testing of named source files with cargo-mutants: each mutant
# (a function body replaced, an operator swapped, ...) is built and tested;
# a mutant no test fails on is "missed". Prints one markdown row a file:
#   | module | caught | missed | unviable | timeout | caught % of viable |
# and lists the missed mutants, for docs/testing.md.
#
# Not part of CI (too slow on 2 cores): run it on the files a change touches
# before calling the change done.
#
# Usage: scripts/mutants.sh PACKAGE FILE [FILE...] [-- CARGO_TEST_ARGS...]
#   scripts/mutants.sh ratekeeper crates/ratekeeper/src/pool/claims.rs -- --lib
#   scripts/mutants.sh ratekeeper-tower crates/ratekeeper-tower/src/policy.rs
# Needs cargo-mutants (cargo install cargo-mutants --locked). Tests that need
# Redis find REDIS_URL as usual (run it under scripts/with-redis.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: $0 PACKAGE FILE [FILE...] [-- CARGO_TEST_ARGS...]" >&2
  exit 2
fi
if ! cargo mutants --version >/dev/null 2>&1; then
  echo "mutants: cargo-mutants is not installed (cargo install cargo-mutants --locked)" >&2
  exit 127
fi
package=$1
shift
files=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  files+=("$1")
  shift
done
[ "${1:-}" = "--" ] && shift
# Each file's results stay in target/mutants/FILE/mutants.out (outcomes.json,
# caught.txt, missed.txt, ...), replaced by the next run on the same file.
out=target/mutants
mkdir -p "$out"
count() { if [ -s "$1" ]; then grep -c . "$1"; else echo 0; fi; }
echo "| module | caught | missed | unviable | timeout | caught % of viable |"
echo "|---|---|---|---|---|---|"
for file in "${files[@]}"; do
  # Exit status 2 means mutants were missed, 3 timeouts: both are results.
  cargo mutants --package "$package" --file "$file" --output "$out/$(basename "$file")" \
    --timeout-multiplier 3 -- "$@" >"$out/$(basename "$file").log" 2>&1 || true
  dir="$out/$(basename "$file")/mutants.out"
  if [ ! -d "$dir" ]; then
    echo "mutants: no results for $file:" >&2
    tail -20 "$out/$(basename "$file").log" >&2
    exit 1
  fi
  caught=$(count "$dir/caught.txt")
  missed=$(count "$dir/missed.txt")
  unviable=$(count "$dir/unviable.txt")
  timeout=$(count "$dir/timeout.txt")
  viable=$((caught + missed + timeout))
  pct=$([ "$viable" -gt 0 ] && echo "$((100 * (caught + timeout) / viable))" || echo "-")
  echo "| \`$file\` | $caught | $missed | $unviable | $timeout | $pct |"
  if [ "$missed" -gt 0 ]; then
    sed 's/^/  missed: /' "$dir/missed.txt" >&2
  fi
done
