#!/usr/bin/env bash
# Burns 2014's multiprocessor study (shape): cores needed versus the number of single-vCPU VMs,
# each with 10 Baker light tasks (WCET 1%..10% of the period; execution times normal, mean 30% or
# 70% of the WCET, SD = WCET/6), Cantelli budgets at rho 0.1..0.9 against WCET budgets, exact PRM
# interfaces, best-fit decreasing. Prints one markdown table per mean (cores used, mean over seeds).
#   experiments/seeds5_cores_vs_vms.sh [seeds] [tasks per VM]      (default 3 10)
# The table is in docs/plan.md; the ordering is asserted by crates/analysis/tests/seeds5_cores.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run -q --release -p rtvirt-analysis --example cores_vs_vms -- "${1:-3}" "${2:-10}"
