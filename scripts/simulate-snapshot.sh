#!/usr/bin/env bash
# Writes `rtvirt simulate FILE --format json` (stdout, then the exit code) for every scenario in
# scenarios/ into DIR, so that a refactoring can be checked to leave every output byte-identical:
#   scripts/simulate-snapshot.sh /tmp/before   # on the old tree
#   scripts/simulate-snapshot.sh /tmp/after    # on the new tree
#   diff -r /tmp/before /tmp/after && echo identical
# Uses target/release/rtvirt (build it first) unless RTVIRT names another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/simulate-snapshot.sh DIR}"
bin="${RTVIRT:-./target/release/rtvirt}"
mkdir -p "$out"
for f in scenarios/*.toml; do
    name=$(basename "$f" .toml)
    set +e
    "$bin" simulate "$f" --format json > "$out/$name.json" 2> "$out/$name.stderr"
    echo "exit $?" >> "$out/$name.json"
    set -e
done
# A planned run and a sweep exercise the --plan and --sweep paths too.
"$bin" plan scenarios/default.toml --format json > "$out/default.plan.json" || true
"$bin" simulate scenarios/default.toml --plan "$out/default.plan.json" --format json --duration 2s > "$out/default.planned.json" 2>/dev/null || true
"$bin" simulate --sweep experiments/seeds5_dsr_vs_rho.sweep.toml --format json > "$out/sweep.json" 2>/dev/null || true
echo "snapshot: $(ls "$out" | wc -l) files in $out"
