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

# make test checks formatting and lints: rustfmt and clippy must be part of the toolchain.
for component in fmt clippy; do
    if ! cargo "$component" --version >/dev/null 2>&1; then
        if need_cmd rustup; then rustup component add "$( [ $component = fmt ] && echo rustfmt || echo clippy )"; fi
        cargo "$component" --version >/dev/null 2>&1 ||
            { echo "setup: cargo $component is missing; install the rustfmt and clippy components" >&2; exit 2; }
    fi
done

# Debian packages the tests use (real tools, real QEMU, real browser). One per line: package.
APT_PACKAGES=(
    rt-tests        # cyclictest, cyclicdeadline, oslat: side-by-side timer check, importer tests
    sockperf        # side-by-side net RR check
    iperf3          # importer tests (netperf: no package in Debian's main repositories; its importer
                    # is tested on recorded outputs, crates/import/tests/samples)
    stress-ng
    iproute2        # ip netns / veth / bridge for containers
    procps
    time            # /usr/bin/time -v: peak memory of the real binary in the bound tests
    util-linux      # chrt, taskset
    libvirt-clients # virt-xml-validate: plan --emit libvirt's domains checked against libvirt's schema
    libxml2-utils   # xmllint, which virt-xml-validate runs
    qemu-system-x86 # host tests: a real QEMU (TCG) with QMP for thread discovery and apply/revert
    busybox-static  # vm: the guest initramfs's shell and tools
    cpio            # vm: packing the guest initramfs
    ethtool         # host tests: GRO on a veth so that it has NAPI instances (threaded NAPI)
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

# plan --emit kubevirt's VMs are decoded by KubeVirt's own Go API types (kubevirt.io/api) in a test:
# the validator's modules are fetched into Go's module cache and built once here (the test's
# `go build` then finds everything in Go's caches).
if ! need_cmd go; then
    echo "setup: go not found; install the Go toolchain (1.23 or newer)" >&2
    exit 2
fi
(cd crates/cli/tests/kubevirt-validate && go mod download && go build -o /dev/null .) ||
    { echo "setup: cannot fetch or build crates/cli/tests/kubevirt-validate (Go module proxy)" >&2; exit 2; }

# --- rtvirt-vm (crates/vm): QEMU guests ------------------------------------------------------
# QEMU, static busybox and cpio (in APT_PACKAGES above) build and boot the guest image; the guest
# kernels are Debian's cloud (non-RT, "nrt") and rt (PREEMPT_RT, "rt") packages, downloaded with
# apt and unpacked with dpkg-deb into the cache rtvirt-vm reads (same rule as crates/vm/src/paths.rs).
vm_cache="${RTVIRT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rtvirt}"
fetch_guest_kernel() {  # $1: rt|nrt  $2: Debian metapackage
    local dest="$vm_cache/kernels/$1" pkg deb
    ls "$dest"/boot/vmlinuz-* >/dev/null 2>&1 && return 0
    pkg=$(apt-cache depends "$2" 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    if [ -z "$pkg" ]; then
        apt-get update -qq
        pkg=$(apt-cache depends "$2" | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    fi
    [ -n "$pkg" ] || { echo "setup: cannot resolve the kernel package of $2" >&2; exit 2; }
    echo "setup: fetching guest kernel $pkg into $dest"
    mkdir -p "$vm_cache/debs"
    (cd "$vm_cache/debs" && apt-get download -qq "$pkg") || { echo "setup: apt-get download $pkg failed" >&2; exit 2; }
    deb=$(ls -t "$vm_cache/debs/${pkg}"_*.deb | head -1)
    rm -rf "$dest.tmp" && mkdir -p "$dest.tmp" && dpkg-deb -x "$deb" "$dest.tmp"
    rm -rf "$dest" && mv "$dest.tmp" "$dest"
}
fetch_guest_kernel nrt linux-image-cloud-amd64
fetch_guest_kernel rt linux-image-rt-amd64
# --- end rtvirt-vm ---------------------------------------------------------------------------

# Python venv: SimPy 2.3.1 + SimSo 0.8.5 for the simulator's cross-checks (SimSo needs that SimPy);
# maturin builds the rtvirt Python package (crates/python) into it, and its tests and notebook use
# pandas, pyarrow (Parquet), Ray (sweeps on a cluster), tqdm, matplotlib and pytest; scipy is the
# independent oracle of the tail fit (crates/python/tests/test_tail.py).
PYTHON_PACKAGES=(
    'SimPy==2.3.1' 'simso==0.8.5'
    'maturin==1.16.0' 'pandas==3.1.1' 'pyarrow==26.0.1' 'ray==2.60.0' 'tqdm==4.70.1' 'matplotlib==3.11.2'
    'pytest==9.2.0' 'scipy==1.17.1'
)
[ -x .venv/bin/python ] || { echo "setup: creating .venv"; python3 -m venv .venv; }
if ! .venv/bin/python -c 'import simso, pandas, pyarrow, ray, tqdm, matplotlib, pytest, scipy' 2>/dev/null ||
    [ ! -x .venv/bin/maturin ]; then
    echo "setup: installing Python packages into .venv: ${PYTHON_PACKAGES[*]}"
    .venv/bin/pip install -q "${PYTHON_PACKAGES[@]}"
fi
echo "setup: ok"
