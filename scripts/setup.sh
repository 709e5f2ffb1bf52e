#!/usr/bin/env bash
# Installs everything rtvirt's build, demo and tests need on a fresh Debian 12 machine.
# Idempotent: installs only what is missing. Used by `make demo` and `make test`.
#   scripts/setup.sh build   - the Rust toolchain check only
#   scripts/setup.sh test    - plus Debian packages and the Python venv the tests use
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-test}"

need_cmd() { command -v "$1" >/dev/null 2>&1; }

if ! need_cmd cargo; then
    echo "setup: cargo not found; install the stable Rust toolchain (rustup) first" >&2
    exit 2
fi
[ "$mode" = build ] && exit 0

# Debian packages the tests use (real tools, real QEMU, real browser). One per line: package.
APT_PACKAGES=(
    rt-tests        # cyclictest, side-by-side timer check
    sockperf        # side-by-side net RR check
    iperf3
    stress-ng
    iproute2        # ip netns / veth / bridge for containers
    procps
    util-linux      # chrt, taskset
    chromium        # report tests: headless browser loads the HTML report, screenshot
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python venv for cross-checks (SimSo 0.8.5 needs SimPy 2.3.1).
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import simso' 2>/dev/null; then
    echo "setup: creating .venv with simso"
    python3 -m venv .venv
    .venv/bin/pip install -q 'SimPy==2.3.1' 'simso==0.8.5'
fi
echo "setup: ok"
