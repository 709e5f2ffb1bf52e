#!/usr/bin/env bash
# Two rtvirt binaries simulating the same scenarios side by side, interleaved (old, new, old, new,
# ... in one run), so that a shared, loaded machine slows both alike: compare the ratio, not the
# absolute times. For each scenario: the median wall and user seconds of each binary over ROUNDS
# runs, simulated seconds per wall second ("x real time"), and new/old speed-up (old wall / new
# wall, old user / new user). Every run's JSON output must be byte-identical between the two
# binaries, else the script says which scenario differs and exits 1.
#
#   crates/sim/bench/side_by_side.sh OLD NEW [SCENARIO...]
#     ROUNDS=3 DURATION=30s (passed as --duration; empty: the scenario's own) EXTRA="--plan p.json"
#   default scenarios: scenarios/seeds1_*_hr.toml (Garcia Alvarado 2019 with Heavy Receivers)
set -euo pipefail
cd "$(dirname "$0")/../../.."
old="${1:?usage: side_by_side.sh OLD NEW [SCENARIO...]}"
new="${2:?usage: side_by_side.sh OLD NEW [SCENARIO...]}"
shift 2
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(scenarios/seeds1_*_hr.toml)
rounds="${ROUNDS:-3}"
duration="${DURATION-30s}"
read -r -a extra <<< "${EXTRA:-}"
args=(--format json)
[ -n "$duration" ] && args+=(--duration "$duration")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# simulated seconds, from rtvirt's closing line on stderr ("simulated 30s in 2.95s wall ...")
seconds() {
    python3 -c 'import re,sys; m = re.search(r"simulated (\d+(?:\.\d+)?)(ms|s|min) in", open(sys.argv[1]).read())
print(float(m[1]) * {"ms": 1e-3, "s": 1, "min": 60}[m[2]])' "$1"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %8s %8s %8s %8s %7s %7s %12s %12s\n' scenario old_wall new_wall old_user new_user \
    old_x new_x speedup_wall speedup_user
status=0
for s in "${scenarios[@]}"; do
    name=$(basename "$s" .toml)
    for r in $(seq "$rounds"); do
        for which in old new; do
            bin=$old
            [ "$which" = new ] && bin=$new
            /usr/bin/time -f "%e %U" -o "$tmp/time" "$bin" simulate "$s" "${args[@]}" "${extra[@]}" \
                > "$tmp/$which.json" 2> "$tmp/$which.stderr" || true
            read -r wall user < "$tmp/time"
            echo "$wall" >> "$tmp/$name.$which.wall"
            echo "$user" >> "$tmp/$name.$which.user"
        done
        if ! cmp -s "$tmp/old.json" "$tmp/new.json"; then
            echo "OUTPUT DIFFERS: $s (round $r)"
            status=1
        fi
    done
    sim_s=$(seconds "$tmp/new.stderr")
    ow=$(median < "$tmp/$name.old.wall"); nw=$(median < "$tmp/$name.new.wall")
    ou=$(median < "$tmp/$name.old.user"); nu=$(median < "$tmp/$name.new.user")
    awk -v n="$name" -v s="$sim_s" -v ow="$ow" -v nw="$nw" -v ou="$ou" -v nu="$nu" 'BEGIN {
        printf "%-44s %8.2f %8.2f %8.2f %8.2f %7.2f %7.2f %12s %12s\n", n, ow, nw, ou, nu, (ow > 0) ? s / ow : 0,
            (nw > 0) ? s / nw : 0, (nw > 0) ? sprintf("%.2f", ow / nw) : "-", (nu > 0) ? sprintf("%.2f", ou / nu) : "-" }'
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "(x: simulated seconds per wall second; speedup: old median time / new median time)"
exit $status
