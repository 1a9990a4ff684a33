#!/usr/bin/env bash
# The core crate's size as issue 32 counts it: lines of every source file of
# crates/ratekeeper/src except test files (tests.rs), how many of them are
# rustdoc (/// or //!), and any file over 800 lines. Needs python3.
set -euo pipefail
cd "$(dirname "$0")/../crates/ratekeeper/src"
exec python3 - <<'PY'
import os
total = doc = 0
big = []
for dp, _, fns in os.walk("."):
    for f in fns:
        if not f.endswith(".rs") or f == "tests.rs":
            continue
        p = os.path.relpath(os.path.join(dp, f))
        lines = open(p, encoding="utf-8").read().splitlines()
        total += len(lines)
        doc += sum(1 for l in lines if l.strip().startswith(("///", "//!")))
        if len(lines) > 800:
            big.append(f"{p} ({len(lines)})")
print(f"lines {total}, rustdoc {doc} ({100 * doc / max(total, 1):.1f} %)")
print("over 800 lines: " + (", ".join(sorted(big)) or "none"))
PY
