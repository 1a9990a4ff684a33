#!/usr/bin/env bash
# The CLI against Redis faults, one real redis-server on a free loopback port:
# a key of another type, the local fallback after a kill, the default policy
# under maxmemory, two rates on one key, a second run on a finished run's key,
# closed and local runs whose server dies, SIGINT while the server is paused,
# and a password in the URL with no server. Prints each run's exit status and
# the report lines that matter. Needs redis-server, redis-cli and python3.
#
# Usage: cargo build --release -p ratekeeper-cli && scripts/redis-cli-faults.sh
#        (RK=path/to/ratekeeper to use another build)
set -u
RK=${RK:-target/release/ratekeeper}
out=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start() { redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile $out/redis.pid --logfile $out/redis.log; sleep 0.3; }
stop() { kill -9 $(cat $out/redis.pid) 2>/dev/null; sleep 0.2; }
URL=redis://127.0.0.1:$port/
cli() { redis-cli -p $port "$@"; }
start
echo "== wrong type"; cli SET WT hello >/dev/null
$RK pace --redis $URL --key WT --rate 1000 --duration 1s > $out/o1 2>&1; echo "rc=$?"; grep -E "^error|ops |started" $out/o1 | head -4
echo "== local fallback, refill, Redis killed at 2 s"
( sleep 2; stop ) & $RK pace --redis $URL --key L3 --limiter refill --rate 1000 --initial-permits 0 --duration 4s --on-redis-failure local > $out/o3 2>&1; echo "rc=$?"; grep -E "ops|wait|achieved|decisions|warning" $out/o3 | head -8; wait; start
echo "== default Pacer, local, killed at 2 s"
( sleep 2; stop ) & $RK pace --redis $URL --key L3b --rate 1000 --duration 4s --on-redis-failure local > $out/o3b 2>&1; echo "rc=$?"; grep -E "ops|wait max|achieved|decisions" $out/o3b | head -6; wait; start
echo "== default policy, maxmemory 1 for 1 s, exec --rate 5 for 3 s"
( sleep 1; cli CONFIG SET maxmemory-policy noeviction >/dev/null; cli CONFIG SET maxmemory 1 >/dev/null; sleep 1; cli CONFIG SET maxmemory 0 >/dev/null ) &
$RK exec --redis $URL --key E6 --rate 5 --duration 3s -- true > $out/o6 2>&1; echo "rc=$?"; grep -E "runs|decisions|warning" $out/o6 | head -6; wait
echo "== pace 1000/s default policy, maxmemory 1 for 1 s, 3 s"
( sleep 1; cli CONFIG SET maxmemory 1 >/dev/null; sleep 1; cli CONFIG SET maxmemory 0 >/dev/null ) &
$RK pace --redis $URL --key P6 --rate 1000 --duration 3s > $out/o6b 2>&1; echo "rc=$?"; grep -E "ops|achieved|decisions|warning" $out/o6b | head -6; wait
echo "== two rates on one key"
$RK pace --redis $URL --key K7 --rate 100 --duration 2s > $out/o7a 2>&1 & sleep 0.3
$RK pace --redis $URL --key K7 --rate 1000 --duration 1s > $out/o7b 2>&1; echo "rc=$?"; grep -E "^error" $out/o7b | head -2; wait
echo "== second run 2 s after the first on one key"
$RK pace --redis $URL --key K9 --rate 1k --duration 2s > $out/o9a 2>&1; sleep 2
$RK pace --redis $URL --key K9 --rate 1k --duration 2s > $out/o9b 2>&1; echo "rc=$?"; grep -E "wait" $out/o9b | head -3
echo "== closed, Redis killed at 1 s"
( sleep 1; stop ) & $RK pace --redis $URL --key C10 --rate 10 --duration 3s --on-redis-failure closed > $out/o10 2>&1; echo "rc=$?"; grep -E "^error|ops|stopped|achieved" $out/o10 | head -6; wait; start
echo "== local, rate 10, killed at 2 s"
( sleep 2; stop ) & $RK pace --redis $URL --key L10 --rate 10 --duration 4s --on-redis-failure local > $out/o10b 2>&1; echo "rc=$?"; grep -E "achieved|not started|behind|ops" $out/o10b | head -6; wait; start
echo "== SIGINT while paused"
( sleep 1; kill -STOP $(cat $out/redis.pid); sleep 6; kill -CONT $(cat $out/redis.pid) ) &
t0=$(date +%s.%N); $RK pace --redis $URL --key S4 --rate 1000 --duration 6s --redis-deadline 30s > $out/o4 2>&1 & pid=$!; sleep 2; kill -INT $pid; wait $pid; rc=$?; t1=$(date +%s.%N)
echo "rc=$rc after $(python3 -c "print(round($t1-$t0,2))") s"; grep -E "interrupted" $out/o4 | head -2; wait
echo "== password, no server"
stop; $RK pace --redis redis://:TopSecretPW@127.0.0.1:$port/ --key P2 --rate 10 --duration 1s > $out/o2 2>&1; echo "rc=$?"; grep -c TopSecretPW $out/o2; head -2 $out/o2
rm -rf "$out"
