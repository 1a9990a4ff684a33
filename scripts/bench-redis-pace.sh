#!/usr/bin/env bash
# Measures a limit shared through Redis: PROCS `ratekeeper pace --redis
# $REDIS_URL --key K --rate RATE --duration DUR --json` processes started
# together on one fresh key (a new one per run: a key keeps its schedule
# for an hour), RUNS times; prints each run's total achieved rate (the sum
# of the processes' ops over the duration) and its error against RATE, and
# the median run. Also the round trips per permit and the decisions not
# made by the server.
#
# Usage: scripts/with-redis.sh scripts/bench-redis-pace.sh [BIN]
#   BIN defaults to target/release/ratekeeper (cargo build --release -p ratekeeper-cli)
#   PROCS=4 RATE=10000 DUR=5s RUNS=3 (environment) set the run; THREADS=N adds --threads N;
#   EXTRA="..." adds pace arguments (e.g. EXTRA="--redis-lease 0": a round trip per permit).
set -euo pipefail
: "${REDIS_URL:?run through scripts/with-redis.sh, or set REDIS_URL}"
bin=${1:-target/release/ratekeeper}
procs=${PROCS:-4}
rate=${RATE:-10000}
dur=${DUR:-5s}
runs=${RUNS:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "bench-redis-pace: $procs x $bin pace --redis $REDIS_URL --key K --rate $rate --duration $dur --json ${EXTRA:+$EXTRA }($runs runs)"
totals=()
for run in $(seq "$runs"); do
  key="bench-redis-pace:$$:$run:$(date +%s%N)"
  pids=()
  for p in $(seq "$procs"); do
    "$bin" pace --redis "$REDIS_URL" --key "$key" --rate "$rate" --duration "$dur" --json ${THREADS:+--threads "$THREADS"} ${EXTRA:-} \
      >"$dir/$run.$p.json" 2>"$dir/$run.$p.err" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  total=$(python3 - "$rate" "$dir"/"$run".*.json <<'PY'
import json, sys
rate = float(sys.argv[1])
rs = [json.load(open(f)) for f in sys.argv[2:]]
ops = sum(r["ops"] for r in rs)
secs = rs[0]["elapsed_ns"] / 1e9
total = ops / secs
rt = sum(r["redis"]["round_trips"] for r in rs) / max(1, sum(r["redis"]["permits"] for r in rs))
other = sum(v for r in rs for k, v in r["redis"]["decisions"].items() if k != "redis")
per = " ".join(f"{r['achieved_rate']:.0f}" for r in rs)
print(f"{total:.1f} {(total - rate) / rate * 100:+.3f} {rt:.4f} {other} {per}")
PY
)
  read -r t err rt other per <<<"$total"
  echo "run $run: total $t ops/s (error $err %), per process $per; $rt round trips per permit, $other decisions not by the server"
  totals+=("$t")
done
printf '%s\n' "${totals[@]}" | sort -g | awk -v rate="$rate" '{a[NR]=$1} END {m=a[int((NR+1)/2)]; printf "median: %.1f ops/s, error %+.3f %% against %s\n", m, (m-rate)/rate*100, rate}'
