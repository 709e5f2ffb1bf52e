//! `--in container`: a container made of the pieces Docker uses, created for one run and always
//! removed: a network namespace, a veth pair whose host end is on a fresh Linux bridge (with the
//! host side address), and a cgroup with a cpuset (plus RT runtime under RT group scheduling).
//! A program runs inside through [`Container::command`]: the child joins the namespace and the
//! cgroups before exec. Net RR between host and container goes over the bridge (Welch 2015).
//!
//! Addresses are a private /24 (10.2xx.y.0) on the bridge this creates, chosen so that it overlaps
//! no existing route. Teardown (drop) deletes the bridge, the veth pair, the namespace and the
//! cgroups, also after a failure halfway through creation or Ctrl-C (the signal only raises a
//! flag, so the guard is dropped normally).

use crate::error::{Error, Result};
use rtvirt_model::results::ContainerDetail;
use rtvirt_os::cgroup::ContainerCgroup;
use std::ffi::CString;
use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// A running container; removed on drop.
#[derive(Debug)]
pub struct Container {
    pub name: String,
    pub netns: String,
    pub bridge: String,
    pub veth_host: String,
    pub veth_container: String,
    pub host_addr: Ipv4Addr,
    pub container_addr: Ipv4Addr,
    pub cpus: Vec<u32>,
    created: Created,
    cgroup: Option<ContainerCgroup>,
}

#[derive(Debug, Default)]
struct Created {
    netns: bool,
    bridge: bool,
    veth: bool,
}

/// Run `ip ARGS`, turning a failure into an error that shows the command and its message.
fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip").args(args).output().map_err(|e| Error::os("cannot run `ip` (install iproute2)", e))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let what = format!("`ip {}` failed: {msg}", args.join(" "));
        return Err(if msg.contains("Operation not permitted") {
            Error::Permission(what)
        } else {
            Error::Failed(what)
        });
    }
    Ok(())
}

/// A 10.x.y.0/24 subnet that no route of this host uses.
fn free_subnet(seed: u32) -> Result<(u8, u8)> {
    let routes = Command::new("ip")
        .args(["-4", "route", "show", "table", "all"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default();
    for k in 0..200u32 {
        let (a, b) = (200 + ((seed + k) / 250 % 50) as u8, ((seed + k) % 250) as u8 + 1);
        let prefix = format!("10.{a}.{b}.");
        if !routes.contains(&prefix) {
            return Ok((a, b));
        }
    }
    Err(Error::Failed("no free 10.2xx.y.0/24 subnet for the container bridge".into()))
}

impl Container {
    /// Create a container limited to `cpus`.
    pub fn create(cpus: &[u32]) -> Result<Container> {
        if !crate::rt::is_root() {
            return Err(Error::Permission(
                "creating a container (network namespace, bridge, cgroup) needs root".into(),
            ));
        }
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("{}{}", std::process::id() % 100_000, n % 10);
        let (a, b) = free_subnet(std::process::id().wrapping_mul(7).wrapping_add(n))?;
        let mut c = Container {
            name: format!("rtvirt-{id}"),
            netns: format!("rtvirt-{id}"),
            bridge: format!("rtvbr{id}"),
            veth_host: format!("rtvh{id}"),
            veth_container: format!("rtvc{id}"),
            host_addr: Ipv4Addr::new(10, a, b, 1),
            container_addr: Ipv4Addr::new(10, a, b, 2),
            cpus: cpus.to_vec(),
            created: Created::default(),
            cgroup: None,
        };
        c.build()?; // on error `c` is dropped here, removing whatever was created
        Ok(c)
    }

    fn build(&mut self) -> Result<()> {
        let (ns, br, vh, vc) =
            (self.netns.clone(), self.bridge.clone(), self.veth_host.clone(), self.veth_container.clone());
        ip(&["netns", "add", &ns])?;
        self.created.netns = true;
        ip(&["link", "add", &br, "type", "bridge"])?;
        self.created.bridge = true;
        ip(&["addr", "add", &format!("{}/24", self.host_addr), "dev", &br])?;
        ip(&["link", "set", &br, "up"])?;
        ip(&["link", "add", &vh, "type", "veth", "peer", "name", &vc])?;
        self.created.veth = true;
        ip(&["link", "set", &vh, "master", &br])?;
        ip(&["link", "set", &vh, "up"])?;
        ip(&["link", "set", &vc, "netns", &ns])?;
        ip(&["-n", &ns, "addr", "add", &format!("{}/24", self.container_addr), "dev", &vc])?;
        ip(&["-n", &ns, "link", "set", &vc, "up"])?;
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        self.cgroup = Some(ContainerCgroup::create(&self.cpus.iter().copied().collect())?);
        Ok(())
    }

    /// A command that runs `program` inside the container (namespace + cgroups), with
    /// `RTVIRT_ENVIRONMENT=container` so that its results record where they were measured.
    pub fn command(&self, program: &std::path::Path) -> Result<Command> {
        let netns_path = CString::new(format!("/run/netns/{}", self.netns)).expect("no NUL");
        let joins: Vec<CString> = self
            .cgroup
            .iter()
            .flat_map(|g| g.join_files.iter())
            .map(|p| CString::new(p.as_os_str().as_encoded_bytes()).expect("no NUL"))
            .collect();
        let mut cmd = Command::new(program);
        cmd.env(crate::environment::ENV_VAR, "container");
        cmd.env(crate::environment::DETAIL_VAR, serde_json::to_string(&self.describe()).unwrap_or_default());
        // SAFETY: the closure only makes async-signal-safe system calls (open, setns, write, close)
        // on strings prepared before fork.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(netns_path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
                if fd < 0 || libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
                for j in &joins {
                    let f = libc::open(j.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if f < 0 || libc::write(f, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    libc::close(f);
                }
                Ok(())
            });
        }
        Ok(cmd)
    }

    /// What a result records about the container.
    pub fn describe(&self) -> ContainerDetail {
        ContainerDetail {
            bridge: self.bridge.clone(),
            cgroups: self
                .cgroup
                .as_ref()
                .map(|g| g.dirs())
                .unwrap_or_default()
                .iter()
                .map(|d| d.display().to_string())
                .collect(),
            container_addr: self.container_addr.to_string(),
            cpuset: crate::cpus::format_list(&self.cpus),
            host_addr: self.host_addr.to_string(),
            netns: self.netns.clone(),
            veth: vec![self.veth_host.clone(), self.veth_container.clone()],
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        self.cgroup = None;
        let quiet = |args: &[&str]| {
            let _ = Command::new("ip").args(args).output();
        };
        if self.created.veth {
            quiet(&["link", "del", &self.veth_host]);
        }
        if self.created.bridge {
            quiet(&["link", "del", &self.bridge]);
        }
        if self.created.netns {
            quiet(&["netns", "del", &self.netns]);
        }
    }
}

/// Whether a network interface of this name exists in the host namespace.
pub fn link_exists(name: &str) -> bool {
    std::path::Path::new("/sys/class/net").join(name).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_inside_and_leaves_nothing_behind() {
        rtvirt_testkit::require_root!();
        let _serial = crate::TEST_CPUSETS.lock().unwrap_or_else(|e| e.into_inner());
        let cpu = *crate::cpus::allowed().last().unwrap();
        let c = Container::create(&[cpu]).unwrap();
        let out = c
            .command(std::path::Path::new("sh"))
            .unwrap()
            .args([
                "-c",
                "ip -4 -o addr show; cat /proc/self/status | grep Cpus_allowed_list; echo $RTVIRT_ENVIRONMENT",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(text.contains(&c.container_addr.to_string()), "{text}");
        assert!(text.contains(&format!("Cpus_allowed_list:\t{cpu}")), "{text}");
        assert!(text.trim_end().ends_with("container"), "{text}");
        // The host reaches the container over the bridge.
        let ping = Command::new("ping").args(["-c1", "-W2", &c.container_addr.to_string()]).output();
        if let Ok(p) = ping {
            assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stdout));
        }
        let (br, ns, dirs) = (c.bridge.clone(), c.netns.clone(), c.cgroup.as_ref().unwrap().dirs());
        drop(c);
        assert!(!link_exists(&br));
        assert!(!std::path::Path::new("/run/netns").join(ns).exists());
        assert!(dirs.iter().all(|d| !d.exists()));
    }

    /// Names in `dir` that start with `prefix`.
    fn entries(dir: &str, prefix: &str) -> Vec<String> {
        let names =
            std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.file_name().to_string_lossy().to_string());
        names.filter(|n| n.starts_with(prefix)).collect()
    }

    #[test]
    fn a_failure_halfway_removes_what_was_created() {
        rtvirt_testkit::require_root!();
        let _serial = crate::TEST_CPUSETS.lock().unwrap_or_else(|e| e.into_inner());
        // The namespace, bridge and veth pair are made, then the cpuset refuses CPU 100000.
        let err = Container::create(&[100_000]).unwrap_err();
        assert!(err.to_string().contains("cpuset"), "{err}");
        let id = std::process::id() % 100_000;
        assert_eq!(entries("/run/netns", &format!("rtvirt-{id}")), Vec::<String>::new());
        for prefix in [format!("rtvbr{id}"), format!("rtvh{id}")] {
            assert_eq!(entries("/sys/class/net", &prefix), Vec::<String>::new());
        }
        if let Some(rtvirt_os::cgroup::Hierarchy::V1(base) | rtvirt_os::cgroup::Hierarchy::V2(base)) =
            rtvirt_os::cgroup::Hierarchy::find("cpuset")
        {
            assert_eq!(
                entries(&base.to_string_lossy(), &format!("rtvirt-ctr-{}-", std::process::id())),
                Vec::<String>::new()
            );
        }
    }
}
