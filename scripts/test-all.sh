#!/usr/bin/env bash
# Runs every test of the workspace: unit, integration, property, conformance
# (including ../shared/vectors when present), doc tests, the loom models, the
# checks that the algorithm folders do not import each other and that the
# CLI's subcommand folders do not either, and the check that no CLI function
# is over 80 lines.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${RATEKEEPER_VECTORS:-}" ] && [ -d ../shared/vectors ]; then
  export RATEKEEPER_VECTORS="$PWD/../shared/vectors"
fi

echo "== rooms"
bash scripts/check-rooms.sh

echo "== CLI rooms"
bash scripts/check-cli-rooms.sh

echo "== function length (CLI)"
bash scripts/check-fn-length.sh

echo "== cargo test (all features)"
cargo test --workspace --all-features

echo "== loom models"
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
  cargo test --release -p ratekeeper --test loom
