//! Experiment 5 of `host calibrate`: what one vCPU exit and re-entry costs on this host, with
//! KVM itself - a minimal VM with no guest kernel, only eleven bytes of real-mode code, so it runs
//! where standard guest kernels hang under nested KVM (see rtvirt-vm's `accel`).
//!
//! The guest loops `xor eax, eax; cpuid; dec si; jnz` and then writes one byte to port 0x10.
//! `cpuid` always exits to the hypervisor, which emulates it in the kernel and re-enters: a run
//! of N iterations is N in-kernel exits and entries, and the port write ends the run with an
//! exit to this process (the VMM's case, as QEMU's device emulation). One sample of the
//! in-kernel cost is a run of [`EXITS_PER_SAMPLE`] iterations divided by that count; one sample
//! of the exit to user space is a run of a single iteration less the in-kernel median. This is
//! kvm-unit-tests' `vmexit` method (its `cpuid` test). On a host that is itself a VM (nested
//! KVM) each exit goes through the outer hypervisor too: that is then this host's real cost.
//!
//! The ioctls are rust-vmm's `kvm-ioctls` (the maintained crate Firecracker and Cloud
//! Hypervisor use); nothing of KVM's API is written by hand here.

use kvm_bindings::kvm_userspace_memory_region;
use kvm_ioctls::{Kvm, VcpuExit, VcpuFd};
use rtvirt_model::stats::LatencyHistogram;
use std::time::{Duration, Instant};

/// `cpuid` exits per in-kernel sample.
pub const EXITS_PER_SAMPLE: u64 = 1_000;
/// Where the guest code sits in guest-physical memory, and the memory's size.
const CODE_AT: usize = 0x1000;
const MEMORY: usize = 0x10000;
/// The port the guest writes to when its run is done.
const DONE_PORT: u16 = 0x10;
/// `0: xor eax,eax; 3: cpuid; 5: dec si; 6: jnz 0; 8: out 0x10,al; 10: hlt` (16-bit real mode).
const GUEST_CODE: [u8; 11] = [0x66, 0x31, 0xC0, 0x0F, 0xA2, 0x4E, 0x75, 0xF8, 0xE6, 0x10, 0xF4];
/// Samples of each kind at most (and at least, unless the time budget ends first).
const MAX_SAMPLES: u32 = 200;
const MIN_SAMPLES: u32 = 20;

/// What the experiment measured (ns per exit and re-entry).
pub struct ExitCosts {
    /// Exits the kernel handles itself (`cpuid`).
    pub in_kernel: LatencyHistogram,
    /// Exits to the VMM process and back (port I/O), less one in-kernel exit.
    pub to_user: LatencyHistogram,
}

/// The minimal VM: its vCPU and the guest memory (unmapped on drop, after the VM's file
/// descriptors are closed).
struct TinyVm {
    vcpu: VcpuFd,
    _vm: kvm_ioctls::VmFd,
    _memory: GuestMemory,
}

/// Anonymous memory mapped for the guest.
struct GuestMemory(*mut u8);

impl Drop for GuestMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping of MEMORY bytes made in `TinyVm::new`, unmapped once.
        unsafe { libc::munmap(self.0.cast(), MEMORY) };
    }
}

impl TinyVm {
    fn new() -> Result<TinyVm, String> {
        let kvm = Kvm::new().map_err(|e| format!("/dev/kvm: {e}"))?;
        let vm = kvm.create_vm().map_err(|e| format!("KVM_CREATE_VM: {e}"))?;
        // SAFETY: a fresh anonymous private mapping; checked against MAP_FAILED below.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                MEMORY,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_ANONYMOUS | libc::MAP_PRIVATE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(format!("guest memory: {}", std::io::Error::last_os_error()));
        }
        let memory = GuestMemory(raw.cast());
        // SAFETY: GUEST_CODE fits in the MEMORY-byte mapping at CODE_AT.
        unsafe { std::ptr::copy_nonoverlapping(GUEST_CODE.as_ptr(), memory.0.add(CODE_AT), GUEST_CODE.len()) };
        let region = kvm_userspace_memory_region {
            slot: 0,
            guest_phys_addr: 0,
            memory_size: MEMORY as u64,
            userspace_addr: memory.0 as u64,
            flags: 0,
        };
        // SAFETY: the region is the live mapping above, which outlives the VM (field order).
        unsafe { vm.set_user_memory_region(region) }.map_err(|e| format!("KVM_SET_USER_MEMORY_REGION: {e}"))?;
        let vcpu = vm.create_vcpu(0).map_err(|e| format!("KVM_CREATE_VCPU: {e}"))?;
        let mut sregs = vcpu.get_sregs().map_err(|e| format!("KVM_GET_SREGS: {e}"))?;
        sregs.cs.base = 0;
        sregs.cs.selector = 0;
        vcpu.set_sregs(&sregs).map_err(|e| format!("KVM_SET_SREGS: {e}"))?;
        Ok(TinyVm { vcpu, _vm: vm, _memory: memory })
    }

    /// One run of `iterations` cpuid exits ending at the port write: how long it took.
    fn run(&mut self, iterations: u64) -> Result<Duration, String> {
        let mut regs = self.vcpu.get_regs().map_err(|e| format!("KVM_GET_REGS: {e}"))?;
        regs.rip = CODE_AT as u64;
        regs.rsi = iterations;
        regs.rflags = 2;
        self.vcpu.set_regs(&regs).map_err(|e| format!("KVM_SET_REGS: {e}"))?;
        let started = Instant::now();
        match self.vcpu.run().map_err(|e| format!("KVM_RUN: {e}"))? {
            VcpuExit::IoOut(DONE_PORT, _) => Ok(started.elapsed()),
            other => Err(format!("the guest stopped unexpectedly: {other:?}")),
        }
    }
}

/// Measure on the calling thread (pinned by the caller) for at most `budget` (less after a
/// Ctrl-C: the caller then stops). An error says why KVM could not be used (no /dev/kvm, no
/// permission, a failed ioctl).
pub fn measure(budget: Duration) -> Result<ExitCosts, String> {
    let mut vm = TinyVm::new()?;
    let until = Instant::now() + budget;
    let mut in_kernel = LatencyHistogram::new();
    vm.run(EXITS_PER_SAMPLE)?; // warm: page faults on the guest memory, first entry
    for i in 0..MAX_SAMPLES {
        if (i >= MIN_SAMPLES && Instant::now() >= until) || rtvirt_os::signals::interrupted() {
            break;
        }
        in_kernel.record(vm.run(EXITS_PER_SAMPLE)?.as_nanos() as u64 / EXITS_PER_SAMPLE);
    }
    let one_cpuid = in_kernel.quantile(0.5);
    let mut to_user = LatencyHistogram::new();
    for i in 0..MAX_SAMPLES {
        if (i >= MIN_SAMPLES && Instant::now() >= until + budget / 4) || rtvirt_os::signals::interrupted() {
            break;
        }
        to_user.record((vm.run(1)?.as_nanos() as u64).saturating_sub(one_cpuid));
    }
    Ok(ExitCosts { in_kernel, to_user })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_code_loops_on_cpuid_and_ends_at_the_port_write() {
        // jnz's displacement goes back to offset 0 from the end of the jnz (offset 8)
        assert_eq!(GUEST_CODE[6..8], [0x75, (-8i8) as u8]);
        assert_eq!(GUEST_CODE[8..10], [0xE6, DONE_PORT as u8]);
    }
}
