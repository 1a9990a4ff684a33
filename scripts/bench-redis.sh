#!/usr/bin/env bash
# Decisions on Redis (issue 19, items 7 and 8): builds the bench_redis
# example (release) and runs it against a throwaway server
# (scripts/with-redis.sh), then, with --redis-benchmark, measures the
# server's ceiling for the Pacer's script alone with redis-benchmark
# (EVALSHA of pacer.lua on one hot key, as docs/redis-hot-keys.md quotes).
#
# Usage: scripts/bench-redis.sh [--pin] [--redis-benchmark] [-- BENCH_REDIS ARGS...]
#   --pin              pin the server to CPU 0 and the client to CPU 1
#                      (taskset; distributed.md §3.1 did the same)
#   --redis-benchmark  also run redis-benchmark: -n 200000 -c 50, with -P 1
#                      and -P 16, 5 repetitions each, and print INFO
#                      commandstats after each
#   e.g. scripts/bench-redis.sh --pin -- --rounds 5 --requests 100000
#
# Needs redis-server, redis-cli, redis-benchmark and, for --pin, taskset.
set -euo pipefail
cd "$(dirname "$0")/.."
pin=0
rb=0
while [ $# -gt 0 ]; do
  case "$1" in
    --pin) pin=1 ;;
    --redis-benchmark) rb=1 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--pin] [--redis-benchmark] [-- BENCH_REDIS ARGS...]" >&2; exit 2 ;;
  esac
  shift
done
cargo build --release -p ratekeeper-redis --example bench_redis
bin="${CARGO_TARGET_DIR:-target}/release/examples/bench_redis"
export RK_PIN=$pin RK_RB=$rb RK_BIN=$bin
exec scripts/with-redis.sh bash -c '
set -euo pipefail
client=()
if [ "$RK_PIN" = 1 ]; then
  # Every thread of the server on CPU 0, the client on CPU 1.
  taskset -a -pc 0 "$(cat "$REDIS_PID_FILE")" >/dev/null
  client=(taskset -c 1)
  echo "pinned: server on CPU 0, client on CPU 1"
else
  echo "not pinned"
fi
"${client[@]}" "$RK_BIN" "$@"
if [ "$RK_RB" = 1 ]; then
  cli=(redis-cli -p "$REDIS_PORT")
  sha=$("${cli[@]}" SCRIPT LOAD "$(cat crates/ratekeeper-redis/src/scripts/pacer.lua)")
  # pacer.lua: KEYS[1]; kind 0 (average), span 1 ns, burst 0, shift 0,
  # any wait (-1), the server TIME (-1), idle 3600000 ms: every call is
  # granted and writes (the bench example'"'"'s "raw pacer").
  echo "redis-benchmark, EVALSHA $sha (pacer.lua) 1 rk-rb:pacer 0 1 0 0 -1 -1 3600000"
  for p in 1 16; do
    rps=()
    for rep in 1 2 3 4 5; do
      "${cli[@]}" CONFIG RESETSTAT >/dev/null
      line=$("${client[@]}" redis-benchmark -p "$REDIS_PORT" -n 200000 -c 50 -P "$p" --csv \
        EVALSHA "$sha" 1 rk-rb:pacer 0 1 0 0 -1 -1 3600000 | tail -1)
      r=$(echo "$line" | cut -d, -f2 | tr -d "\"")
      p50=$(echo "$line" | cut -d, -f5 | tr -d "\"")
      us=$("${cli[@]}" INFO commandstats | grep "^cmdstat_evalsha:" | sed "s/.*usec_per_call=\([0-9.]*\).*/\1/")
      echo "  -c 50 -P $p, run $rep: $r requests/s, p50 $p50 ms, EVALSHA $us us/call"
      rps+=("$r")
    done
    echo "  -c 50 -P $p: median $(printf "%s\n" "${rps[@]}" | sort -g | sed -n 3p) (min $(printf "%s\n" "${rps[@]}" | sort -g | head -1), max $(printf "%s\n" "${rps[@]}" | sort -g | tail -1)) requests/s"
  done
  echo "INFO commandstats after the last run:"
  "${cli[@]}" INFO commandstats | grep -v "^#" | grep -v "^cmdstat_config\|^cmdstat_info" | sed "s/^/  /"
fi
' bench-redis "$@"
