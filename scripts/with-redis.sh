#!/usr/bin/env bash
# Runs a command with a throwaway Redis server: starts redis-server on a free
# loopback port (no persistence), exports REDIS_URL (and REDIS_PORT,
# REDIS_PID_FILE, REDIS_CLI: redis-cli with the port), runs the command,
# then stops the server, whatever the command's outcome. The command's exit
# status is the script's.
#
# Usage: scripts/with-redis.sh COMMAND [ARGS...]
#   scripts/with-redis.sh cargo test -p ratekeeper-redis
#
# Needs redis-server and redis-cli (Debian: apt-get install redis-server).
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
if ! command -v redis-server >/dev/null 2>&1; then
  echo "with-redis: redis-server is not installed (apt-get install redis-server)" >&2
  exit 127
fi
dir=$(mktemp -d)
# A free port: bind to port 0 and read what the kernel chose.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
  --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir"
stop() {
  if [ -f "$dir/redis.pid" ]; then
    pid=$(cat "$dir/redis.pid" 2>/dev/null || true)
    if [ -n "$pid" ]; then
      kill "$pid" 2>/dev/null || true
      # SIGCONT in case a test left it stopped (kill -STOP).
      kill -CONT "$pid" 2>/dev/null || true
      # Until it has exited (it writes to $dir as it does), 2 s at most.
      for _ in $(seq 40); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
      done
    fi
  fi
  rm -rf "$dir" 2>/dev/null || true
}
trap stop EXIT
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done
redis-cli -p "$port" ping >/dev/null
export REDIS_URL="redis://127.0.0.1:$port/"
export REDIS_PORT="$port"
export REDIS_PID_FILE="$dir/redis.pid"
echo "with-redis: redis-server $(redis-server --version | awk '{print $3}') on 127.0.0.1:$port" >&2
set +e
"$@"
status=$?
set -e
exit "$status"
