//! QEMU's command line for a guest run, and pinning its vCPU threads.

use crate::config::{Accel, GuestConfig, GuestFile};
use crate::error::{Result, VmError};
use crate::image::Image;
use crate::net;
use rtvirt_os::CpuList;
use std::path::Path;

/// QEMU's command line.
pub fn qemu_args(image: &Image, cfg: &GuestConfig, dir: &Path, cmdline: &str, tap: Option<&str>) -> Vec<String> {
    let p = |f: &str| dir.join(f).display().to_string();
    let mut a: Vec<String> = vec![
        "-name".into(),
        format!("{},debug-threads=on", cfg.name),
        "-machine".into(),
        "q35".into(),
        // TCG's default 1 GiB translation cache would be locked by mem-lock: keep it small.
        "-accel".into(),
        if cfg.accel == Accel::Kvm { "kvm".into() } else { "tcg,tb-size=64".into() },
        "-cpu".into(),
        if cfg.accel == Accel::Kvm { "host".into() } else { "max".into() },
        "-smp".into(),
        cfg.vcpus.to_string(),
        "-m".into(),
        cfg.memory_mib.to_string(),
        "-overcommit".into(),
        "mem-lock=on".into(),
        "-kernel".into(),
        image.vmlinuz.display().to_string(),
        "-initrd".into(),
        image.initramfs.display().to_string(),
        "-append".into(),
        cmdline.into(),
        "-nodefaults".into(),
        "-no-user-config".into(),
        "-display".into(),
        "none".into(),
        "-no-reboot".into(),
        "-serial".into(),
        format!("file:{}", p("console.log")),
        "-serial".into(),
        format!("file:{}", p("output.log")),
        "-qmp".into(),
        format!("unix:{},server=on,wait=off", p("qmp.sock")),
        "-pidfile".into(),
        p("qemu.pid"),
    ];
    if cfg.clock_line {
        a.push("-serial".into());
        a.push(format!("unix:{},server=on,wait=off", p(crate::clock::SOCKET)));
    }
    if cfg.agent {
        a.extend(crate::agent::qemu_args(dir));
    }
    for f in &cfg.files {
        // QEMU option values escape a comma by doubling it.
        let file = GuestFile::host_dir(dir).join(&f.name).display().to_string().replace(',', ",,");
        a.push("-fw_cfg".into());
        a.push(format!("name={}{},file={file}", crate::init::FW_CFG_PREFIX, f.name));
    }
    if let Some(tap) = tap {
        let vhost = if net::vhost_available() { "on" } else { "off" };
        a.push("-netdev".into());
        a.push(format!("tap,id=net0,ifname={tap},script=no,downscript=no,vhost={vhost}"));
        a.push("-device".into());
        a.push("virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56".into());
    }
    a
}

/// Pin vCPU threads to host CPUs (vCPU i -> `cpus[i]`), by rtvirt-os's `sched_setaffinity`.
pub fn pin_threads(tids: &[i32], cpus: &[usize]) -> Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    if cpus.len() != tids.len() {
        return Err(VmError::Invalid(format!("--pin lists {} CPUs for {} vCPUs", cpus.len(), tids.len())));
    }
    for (&tid, &cpu) in tids.iter().zip(cpus) {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(VmError::Invalid(format!("host CPU {cpu}: out of range (at most {})", libc::CPU_SETSIZE - 1)));
        }
        rtvirt_os::sched::set_affinity(tid as u32, &CpuList::single(cpu as u32))
            .map_err(|e| VmError::Invalid(format!("cannot pin vCPU thread {tid} to host CPU {cpu}: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Flavour;
    use std::time::Duration;

    fn image() -> Image {
        Image {
            flavour: Flavour::Nrt,
            kernel_version: "6.1.0-x-cloud-amd64".into(),
            vmlinuz: "/k/vmlinuz".into(),
            initramfs: "/k/initramfs.cpio".into(),
            key: "0".into(),
            size_bytes: 0,
            rebuilt: false,
            modules: Vec::new(),
        }
    }

    fn joined(accel: Accel, tap: Option<&str>) -> String {
        let mut cfg = GuestConfig::new("g1", accel, Duration::from_secs(1));
        cfg.vcpus = 2;
        cfg.files = vec![crate::config::GuestFile { name: "plan.json".into(), data: b"{}".to_vec() }];
        qemu_args(&image(), &cfg, Path::new("/run/rtvirt/vm/g1"), "console=ttyS0", tap).join(" ")
    }

    #[test]
    fn command_line_has_the_required_pieces() {
        let a = joined(Accel::Tcg, None);
        for piece in [
            "-name g1,debug-threads=on",
            "-accel tcg,tb-size=64",
            "-smp 2",
            "-overcommit mem-lock=on",
            "-kernel /k/vmlinuz -initrd /k/initramfs.cpio -append console=ttyS0",
            "-serial file:/run/rtvirt/vm/g1/console.log -serial file:/run/rtvirt/vm/g1/output.log",
            "-qmp unix:/run/rtvirt/vm/g1/qmp.sock,server=on,wait=off",
            "-no-reboot",
            "-fw_cfg name=opt/rtvirt/plan.json,file=/run/rtvirt/vm/g1/files/plan.json",
        ] {
            assert!(a.contains(piece), "{piece} missing in {a}");
        }
        assert!(!a.contains("-netdev"));
        assert!(!a.contains("clock.sock"), "no clock line unless asked");
        let mut cfg = GuestConfig::new("g1", Accel::Tcg, Duration::from_secs(1));
        cfg.clock_line = true;
        let c = qemu_args(&image(), &cfg, Path::new("/run/rtvirt/vm/g1"), "x", None).join(" ");
        assert!(c.contains("-serial unix:/run/rtvirt/vm/g1/clock.sock,server=on,wait=off"), "{c}");
        assert!(c.find("output.log") < c.find("clock.sock"), "the third serial port: ttyS2");
        assert!(!c.contains("virtserialport"), "no agent port unless asked");
        cfg.agent = true;
        let g = qemu_args(&image(), &cfg, Path::new("/run/rtvirt/vm/g1"), "x", None).join(" ");
        assert!(
            g.contains("-chardev socket,id=rtvirt-agent,path=/run/rtvirt/vm/g1/agent.sock,server=on,wait=off")
                && g.contains("virtserialport,bus=rtvirt-vser.0,chardev=rtvirt-agent,name=org.rtvirt.agent"),
            "{g}"
        );
        let k = joined(Accel::Kvm, Some("rtvtap7"));
        assert!(k.contains("-accel kvm -cpu host"), "{k}");
        assert!(
            k.contains("-netdev tap,id=net0,ifname=rtvtap7,script=no,downscript=no,vhost=")
                && k.contains("virtio-net-pci,netdev=net0"),
            "{k}"
        );
    }

    #[test]
    fn pinning_needs_one_cpu_per_vcpu() {
        assert!(pin_threads(&[1, 2], &[]).is_ok());
        assert!(pin_threads(&[1, 2], &[0]).unwrap_err().to_string().contains("1 CPUs for 2 vCPUs"));
    }
}
