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
#   scripts/mutants.sh ratekeeper crates/ratekeeper/src/batch.rs -- --lib -- batch
# Arguments after the first -- go to cargo test, after a second -- to the
# test binaries (a name filter keeps each mutant's run short).
# MUTANTS_OPTS adds cargo-mutants options, e.g. MUTANTS_OPTS=--iterate to
# retest only what the last run on the same file did not catch (with wider
# test arguments), or MUTANTS_OPTS=--in-place in a worktree of its own, to
# reuse its target folder instead of building a copy from scratch.
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
# Each file's results stay in target/mutants/NAME/mutants.out, NAME being
# the path with / as _ (outcomes.json, caught.txt, missed.txt, ...),
# replaced by the next run on the same file.
out=target/mutants
mkdir -p "$out"
count() { if [ -s "$1" ]; then grep -c . "$1"; else echo 0; fi; }
echo "| module | caught | missed | unviable | timeout | caught % of viable |"
echo "|---|---|---|---|---|---|"
# Test modules are left out: cargo-mutants skips #[cfg(test)] ones, but
# not #[cfg(all(test, not(loom)))], whose helpers it would mutate.
# A timeout is three times the unmutated run's, unless MUTANTS_OPTS names one.
limit=(--timeout-multiplier 3)
case " ${MUTANTS_OPTS:-} " in *" --timeout "*) limit=() ;; esac
for file in "${files[@]}"; do
  name=$(printf '%s' "$file" | tr / _)
  # A run that fails to start must not leave an older run's counts behind
  # (--iterate reads them, so they stay for it).
  case " ${MUTANTS_OPTS:-} " in *" --iterate "*) ;; *) rm -rf "$out/$name/mutants.out" ;; esac
  # Exit status 2 means mutants were missed, 3 timeouts: both are results.
  # shellcheck disable=SC2086 # MUTANTS_OPTS is a list of options
  cargo mutants --package "$package" --file "$file" --output "$out/$name" \
    --exclude-re 'tests::' "${limit[@]}" ${MUTANTS_OPTS:-} -- "$@" >"$out/$name.log" 2>&1 || true
  dir="$out/$name/mutants.out"
  if [ ! -d "$dir" ]; then
    echo "mutants: no results for $file:" >&2
    tail -20 "$out/$name.log" >&2
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
