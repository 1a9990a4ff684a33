#!/usr/bin/env bash
# Lists the CLI's functions (crates/ratekeeper-cli: src/ and tests/) longer
# than MAX_FN_LINES (default 80) lines and fails if there is one: one screen
# per function (ARCHITECTURE.md, item 12). Usage:
#
#   scripts/check-fn-length.sh            # the CLI crate
#   scripts/check-fn-length.sh PATH...    # these .rs files or folders
#   MAX_FN_LINES=60 scripts/check-fn-length.sh
#   ALL=1 scripts/check-fn-length.sh      # every function, longest first
#
# A function runs from its `fn` line to the line that closes it: the first
# line after its signature that is a lone `}` at the `fn` line's own
# indentation (rustfmt's layout), so doc comments and attributes above it do
# not count, a multi-line signature and `where` clause do, and nested
# functions are measured on their own (and count in their parent too). A
# function written on one line is 1 line; a declaration without a body (a
# trait's `fn f(&self);`) is skipped. Closures are not functions here.
set -euo pipefail
cd "$(dirname "$0")/.."

max="${MAX_FN_LINES:-80}"
if [ "$#" -eq 0 ]; then
  set -- crates/ratekeeper-cli/src crates/ratekeeper-cli/tests
fi

# Every function as "LINES FILE:LINE NAME".
measure() {
  find "$@" -name '*.rs' -type f | LC_ALL=C sort | while read -r file; do
    awk -v q="'" '
      function indent(s) { match(s, /^[ \t]*/); return substr(s, 1, RLENGTH) }
      # The line without its string and character literals and its //
      # comment, so that a brace or semicolon in them does not count.
      function code(s) {
        gsub(/\\\\/, "", s); gsub(/\\"/, "", s); gsub(/"[^"]*"/, "\"\"", s)
        gsub(q "\\\\?[^" q "]" q, q q, s)
        sub(/\/\/.*$/, "", s)
        return s
      }
      FNR == 1 { depth = 0; pending = 0 }
      {
        line = $0
        if (match(line, /^[ \t]*((pub(\([a-z: ]+\))?|const|async|unsafe|extern( "[A-Za-z]+")?|default)[ \t]+)*fn[ \t]+[A-Za-z_][A-Za-z0-9_]*/)) {
          head = substr(line, 1, RLENGTH)
          name = head; sub(/^.*fn[ \t]+/, "", name)
          pending = 1; p_indent = indent(line); p_name = name; p_line = FNR
        }
        if (pending) {
          # The signature ends at the body'"'"'s "{", or at a ";" (no body).
          c = code(line)
          brace = index(c, "{"); semi = index(c, ";")
          if (semi && (!brace || semi < brace)) {
            pending = 0
          } else if (brace) {
            pending = 0
            rest = substr(c, brace)
            opened = gsub(/\{/, "{", rest); closed = gsub(/\}/, "}", rest)
            if (opened == closed) {
              print FNR - p_line + 1, FILENAME ":" p_line, p_name
            } else {
              depth++; s_indent[depth] = p_indent; s_name[depth] = p_name; s_line[depth] = p_line
            }
            next
          }
        }
        if (depth > 0 && line ~ /^[ \t]*\}[ \t]*$/) {
          # The innermost open function at this indentation ends here.
          ind = indent(line)
          for (k = depth; k >= 1; k--) {
            if (s_indent[k] == ind) {
              print FNR - s_line[k] + 1, FILENAME ":" s_line[k], s_name[k]
              for (j = k; j < depth; j++) {
                s_indent[j] = s_indent[j + 1]; s_name[j] = s_name[j + 1]; s_line[j] = s_line[j + 1]
              }
              depth--
              break
            }
          }
        }
      }
      END {
        for (k = 1; k <= depth; k++) print "? " FILENAME ":" s_line[k], s_name[k], "(no closing brace found)"
      }
    ' "$file"
  done
}

all=$(measure "$@")
if [ -n "${ALL:-}" ]; then
  echo "$all" | sort -rn
  exit 0
fi
unclosed=$(echo "$all" | grep '^?' || true)
long=$(echo "$all" | grep -v '^?' | awk -v max="$max" '$1 > max' | sort -rn)
status=0
if [ -n "$unclosed" ]; then
  echo "functions whose end was not found (not laid out by rustfmt?):"
  echo "$unclosed"
  status=1
fi
if [ -n "$long" ]; then
  echo "functions over $max lines (lines, where, name):"
  echo "$long"
  status=1
fi
if [ "$status" -eq 0 ]; then
  # sort -rn | head -1 would end sort early with SIGPIPE (141 under
  # pipefail); awk reads all of it.
  longest=$(echo "$all" | sort -rn | awk 'NR == 1')
  echo "functions: none over $max lines (longest: $longest)"
fi
exit "$status"
