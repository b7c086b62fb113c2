#!/usr/bin/env bash
# bench-ratios.sh runs lisp benchmarks that have Go twins (sub-benchmarks
# named .../lisp and .../go) and prints, per group, the ratio lisp/go of
# the median ns/op and of the median cpu-ns/op, with the geometric mean
# and the worst ratio per group prefix (e.g. w12/.../10000).
#
#   scripts/bench-ratios.sh [BENCH_REGEXP] [COUNT] [BENCHTIME]
#   scripts/bench-ratios.sh RunKept 3 200ms
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${1:-RunKept}
count=${2:-3}
benchtime=${3:-300ms}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench "$bench" -count "$count" -benchtime "$benchtime" ./pkg/lisp | tee "$out" >&2
awk '
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark[^\/]*\//, "", name)
	side = name; sub(/.*\//, "", side); key = name; sub(/\/[^\/]*$/, "", key)
	if (side != "lisp" && side != "go") next
	for (i = 2; i < NF; i++) {
		if ($(i + 1) == "ns/op") ns[key, side] = ns[key, side] " " $i
		if ($(i + 1) == "cpu-ns/op") cpu[key, side] = cpu[key, side] " " $i
	}
	keys[key] = 1
}
END {
	printf "%-44s %8s %8s\n", "workload", "wall", "cpu"
	for (k in keys) {
		if (!((k, "lisp") in ns) || !((k, "go") in ns)) continue
		rw = median(ns[k, "lisp"]) / median(ns[k, "go"])
		rc = median(cpu[k, "lisp"]) / median(cpu[k, "go"])
		printf "%-44s %7.2fx %7.2fx\n", k, rw, rc
		# group: the name without the workload (w12/<workload>/10000 -> w12/10000)
		g = k; n = split(k, p, "/"); g = (n >= 3) ? p[1] "/" p[n] : p[n]
		lw[g] += log(rw); lc[g] += log(rc); cnt[g]++
		if (rw > mw[g]) mw[g] = rw
		if (rc > mc[g]) mc[g] = rc
	}
	printf "\n%-20s %10s %10s %10s %10s\n", "group", "geo wall", "geo cpu", "max wall", "max cpu"
	for (g in cnt) printf "%-20s %9.2fx %9.2fx %9.2fx %9.2fx\n", g, exp(lw[g] / cnt[g]), exp(lc[g] / cnt[g]), mw[g], mc[g]
}' "$out" | sort
