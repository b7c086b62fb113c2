#!/usr/bin/env bash
# Runs every fuzz target of the module for a while each, one after the other:
#
#   scripts/fuzz.sh [-t 30s] [-m 5s] [pattern]
#
# -t is the fuzzing time of each target (default 30s), -m the time the fuzzer
# may spend minimizing each new input it keeps (default 5s: go test's 60s
# would let a target whose seeds are large, such as the manifests of
# FuzzDecodeDocuments, spend a short run minimizing instead of fuzzing), and
# pattern, when given, keeps the targets whose package path or name contains
# it. It prints a line per target (its package, name and executions) and, for
# a target that fails, go test's output with the input it wrote under the
# package's testdata/fuzz; it exits 1 when any target failed.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=30s
minimize=5s
while getopts "t:m:" opt; do
  case $opt in
  t) fuzztime=$OPTARG ;;
  m) minimize=$OPTARG ;;
  *) echo "usage: scripts/fuzz.sh [-t 30s] [-m 5s] [pattern]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
pattern=${1:-}

failed=0
ran=0
# each package's fuzz targets: the Fuzz functions of its test files
while read -r pkg dir files; do
  targets=$(cd "$dir" && grep -ho '^func Fuzz[A-Za-z0-9_]*' $files | sed 's/^func //' || true)
  for target in $targets; do
    if [[ -n $pattern && $pkg != *"$pattern"* && $target != *"$pattern"* ]]; then
      continue
    fi
    ran=$((ran + 1))
    if out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg" 2>&1); then
      execs=$(grep -o 'execs: [0-9]*' <<<"$out" | tail -1 || true)
      echo "ok   $pkg $target ${execs:-}"
    else
      echo "FAIL $pkg $target"
      printf '%s\n' "$out" | tail -40
      failed=1
    fi
  done
done < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}{{end}}' ./...)
if [[ $ran == 0 ]]; then
  echo "scripts/fuzz.sh: no fuzz target matches \"$pattern\"" >&2
  exit 2
fi
exit $failed
