#!/usr/bin/env bash
# Checks the core crate's rooms (crates/ratekeeper/src) for import loops, from
# the code lines that name `crate::ROOM` (comments and doc lines aside, test
# files aside):
#
# * between rooms: a room is a top-level file or folder (pacer/, keyed/,
#   clock.rs, ...); no two rooms may reach each other;
# * inside a folder: a file names a sibling explicitly (`super::claims::X`,
#   `crate::pool::claims::X`); no two files of a folder may reach each other;
# * the algorithm families (pacer, pool, smooth, bucket) import nothing from
#   one another, nor from keyed/, tokio/, config/ or batch.rs, which build on
#   them;
# * the leaves (clock.rs, grant.rs, error.rs, rate.rs, store.rs, sync.rs)
#   import no room but each other.
#
# Prints every offending edge with the lines behind it; exits 1 if there is
# one. Needs python3.
set -euo pipefail
cd "$(dirname "$0")/../crates/ratekeeper/src"
exec python3 - "$@" <<'PY'
import os, re, sys
from collections import defaultdict

FAMILIES = {"pacer", "pool", "smooth", "bucket"}
ABOVE_FAMILIES = {"keyed", "tokio", "config", "batch"}
LEAVES = {"clock", "grant", "error", "rate", "store", "sync"}

def room_of(path):
    first = path.split("/")[0]
    return first[:-3] if first.endswith(".rs") else first

def code_lines(path):
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        s = line.strip()
        if s.startswith("//"):
            continue
        yield n, line.split("//")[0] if "://" not in line else line

files = []
for dp, _, fns in os.walk("."):
    for f in fns:
        if not f.endswith(".rs") or f == "tests.rs" or f == "test_util.rs":
            continue
        p = os.path.relpath(os.path.join(dp, f))
        if "/tests/" in "/" + p:
            continue
        files.append(p)
rooms = {room_of(p) for p in files} - {"lib"}

room_edges = defaultdict(list)  # (from, to) -> [where]
file_edges = defaultdict(list)
for p in sorted(files):
    src = room_of(p)
    folder = os.path.dirname(p)
    stem = os.path.basename(p)[:-3]
    for n, line in code_lines(p):
        for m in re.finditer(r"\bcrate::(\w+)(?:::(\w+))?", line):
            dst, sub = m.group(1), m.group(2)
            if dst in rooms and dst != src and src != "lib":
                room_edges[(src, dst)].append(f"{p}:{n}: {line.strip()}")
            if dst == src and folder and sub and os.path.exists(os.path.join(folder, sub + ".rs")) and sub != stem:
                file_edges[(p, os.path.join(folder, sub + ".rs"))].append(f"{p}:{n}: {line.strip()}")
        if stem != "mod" and folder:
            for m in re.finditer(r"\bsuper::(\w+)::", line):
                sib = os.path.join(folder, m.group(1) + ".rs")
                if os.path.exists(sib) and sib != p:
                    file_edges[(p, sib)].append(f"{p}:{n}: {line.strip()}")

def loops(edges):
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    found = set()
    for a, b in edges:
        # b reaches a?
        seen, todo = {b}, [b]
        while todo:
            x = todo.pop()
            if x == a:
                found.add((a, b))
                break
            for y in graph[x] - seen:
                seen.add(y)
                todo.append(y)
    return sorted(found)

status = 0
def report(title, edges, which):
    global status
    for a, b in which:
        status = 1
        print(f"{title}: {a} -> {b}")
        for w in edges[(a, b)][:5]:
            print("    " + w)

report("import loop between rooms", room_edges, loops(room_edges))
report("import loop inside a folder", file_edges, loops(file_edges))
report("a family imports another family or a room above the families", room_edges,
       [e for e in sorted(room_edges) if e[0] in FAMILIES and (e[1] in FAMILIES or e[1] in ABOVE_FAMILIES)])
report("a leaf imports a room", room_edges,
       [e for e in sorted(room_edges) if e[0] in LEAVES and e[1] not in LEAVES])
if status == 0:
    print(f"rooms: no import loop among {len(rooms)} rooms or inside their folders; "
          "the families import no other family; the leaves import no room")
sys.exit(status)
PY
