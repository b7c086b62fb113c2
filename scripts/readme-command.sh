#!/usr/bin/env bash
# Prints the Nth code block (1-based) of the "## Quick start" section of README.md.
# CI runs these blocks verbatim, so the README's commands cannot drift from what CI runs.
set -euo pipefail
n=${1:?usage: readme-command.sh N}
awk -v n="$n" '
  /^## /       { insec = ($0 == "## Quick start") ; next }
  !insec       { next }
  /^```/       { if (inblk) { inblk = 0; if (++k == n) exit } else { inblk = 1 } ; next }
  inblk && k == n - 1 { print }
' "$(dirname "$0")/../README.md"
