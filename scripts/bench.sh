#!/usr/bin/env bash
# `make bench`: the benchmarks behind docs/PERFORMANCE.md, in one run, on this machine. Numbers
# are printed, not asserted (the machine is shared and noisy: compare ratios of one run).
#   scripts/bench.sh [plan|sim|simso|net|all]   (default: all but simso, which needs the venv)
# The measurement side-by-sides (cyclictest, sockperf, measured vs simulated DSR) need root and
# take minutes: crates/probe/bench/side_by_side.py and crates/probe/bench/tasks_vs_sim.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
R=target/release/rtvirt
[ -x "$R" ] || cargo build --release --bin rtvirt
timed() { /usr/bin/time -f "  %e s wall, %U s user, %M KB max RSS" "$@"; }
section() { printf '\n== %s\n' "$*"; }

bench_plan() {
    section "planner: 1000 guests x 10 tasks, growth with tasks/guest and hyperperiod"
    cargo run --quiet --release -p rtvirt-analysis --example plan_bench
    section "planner: 10000 guests x 10 tasks, without and with a host model's overheads (issue 16)"
    cargo run --quiet --release -p rtvirt-analysis --example plan_bench -- 10000 10 1 --headline
}

bench_sim() {
    section "simulator: events/s on a scheduling-heavy scenario (100 s simulated)"
    timed "$R" simulate scenarios/sim_bench.toml --duration 100s >/dev/null
    section "simulator: memory stays flat with the horizon (10 s vs 1000 s)"
    timed "$R" simulate scenarios/sim_bench.toml --duration 10s >/dev/null
    timed "$R" simulate scenarios/sim_bench.toml --duration 1000s >/dev/null
    section "Burns 2014 sweep (27 runs x 20 s, all cores)"
    timed experiments/seeds5_dsr_vs_rho.sh "$R"
}

bench_simso() {
    section "simulator vs SimSo, same task set and horizon (10 tasks, EDF, 10 s)"
    [ -x .venv/bin/python ] || scripts/setup.sh test
    local dir
    dir=$(mktemp -d)
    timed .venv/bin/python experiments/simso_crosscheck.py bench 7 10 10000 "$dir/bench_10s.toml"
    timed "$R" simulate "$dir/bench_10s.toml" --format json >/dev/null
    rm -rf "$dir"
}

bench_net() {
    section "network path: Garcia Alvarado 2019 with Heavy Receivers, 30 s simulated per method"
    for m in nonvirt vanilla threaded exclusive outsourcing; do
        echo "  $m:"
        timed "$R" simulate "scenarios/seeds1_${m}_hr.toml" --duration 30s >/dev/null
    done
    section "network path: the 100-VM step of the scaling study (2 s simulated)"
    for m in threaded outsourcing; do
        echo "  $m:"
        timed "$R" simulate "scenarios/seeds1_scaling_${m}_100.toml" --duration 2s >/dev/null
    done
}

case "$what" in
    plan) bench_plan ;;
    sim) bench_sim ;;
    simso) bench_simso ;;
    net) bench_net ;;
    all) bench_plan; bench_sim; bench_net ;;
    *) echo "usage: scripts/bench.sh [plan|sim|simso|net|all]" >&2; exit 2 ;;
esac
