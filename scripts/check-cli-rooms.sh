#!/usr/bin/env bash
# The CLI's subcommand folders (pace, exec, pipe, simulate) import nothing
# from one another, and its shared modules (flags/, run/, limiter.rs,
# report.rs, plot.rs, progress.rs, error.rs) nothing from a subcommand: what
# two subcommands need lives in a shared module. Only main.rs, which
# dispatches, names the subcommands. Prints every offending line and fails
# if there is one.
set -euo pipefail
cd "$(dirname "$0")/../crates/ratekeeper-cli/src"

rooms=(pace exec pipe simulate)
status=0
# Code lines only: comments may mention any subcommand.
imports() { grep -rnE "crate::($1)(::|\b)" "${@:2}" | grep -vE '^[^:]+:[0-9]+:\s*//' || true; }
for room in "${rooms[@]}"; do
  others=$(printf '%s\n' "${rooms[@]}" | grep -vx "$room" | paste -sd'|')
  hits=$(imports "$others" "$room")
  if [ -n "$hits" ]; then
    echo "$room imports from another subcommand:"
    echo "$hits"
    status=1
  fi
done
shared=$(ls | grep -vxE "main.rs|$(printf '%s|' "${rooms[@]}" | sed 's/|$//')")
# shellcheck disable=SC2086
hits=$(imports "$(printf '%s|' "${rooms[@]}" | sed 's/|$//')" $shared)
if [ -n "$hits" ]; then
  echo "a shared module imports from a subcommand:"
  echo "$hits"
  status=1
fi
[ "$status" -eq 0 ] && echo "CLI rooms: pace, exec, pipe and simulate import nothing from one another, and the shared modules nothing from them"
exit "$status"
