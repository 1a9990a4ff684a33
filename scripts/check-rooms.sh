#!/usr/bin/env bash
# The algorithm folders of the core crate (pacer, pool, smooth, bucket)
# import nothing from one another: shared machinery lives in `internal/` and the
# crate's leaf modules (grant, clock, rate, spec, wait, sync). Prints every
# offending line and fails if there is one.
set -euo pipefail
cd "$(dirname "$0")/../crates/ratekeeper/src"

rooms=(pacer pool smooth bucket)
status=0
for room in "${rooms[@]}"; do
  for other in "${rooms[@]}"; do
    [ "$room" = "$other" ] && continue
    # Code lines only: a doc link such as [`Pacer`](crate::Pacer) names a
    # re-export, not an import, and comments may mention any room.
    if hits=$(grep -rnE "crate::(${other})(::|\b)" "$room" | grep -vE '^[^:]+:[0-9]+:\s*//'); then
      echo "$room imports from $other:"
      echo "$hits"
      status=1
    fi
  done
done
# The leaves every room imports (the grant and the config error) import no
# room, so no room reaches another through them.
for leaf in grant.rs error.rs; do
  if hits=$(grep -nE "crate::(pacer|pool|smooth|bucket|config|batch|tokio)(::|\b)" "$leaf" | grep -vE '^[0-9]+:\s*//'); then
    echo "$leaf is a leaf but imports a room:"
    echo "$hits"
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "rooms: pacer, pool, smooth and bucket import nothing from one another; grant.rs and error.rs import no room"
exit "$status"
