//! Real tracefs (run as root under the host lock): an instance of our own records the events of a
//! real thread, is removed on drop with tracefs unmounted again if we mounted it, and a record left
//! by a killed process makes the next run remove its instance.

use rtvirt_os::tracefs::{self, Instance};
use rtvirt_os::Change;
use std::path::PathBuf;
use std::time::Duration;

fn online_cpus() -> Vec<u32> {
    (0..num_cpus()).collect()
}

fn num_cpus() -> u32 {
    std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
}

#[test]
fn an_instance_records_a_real_threads_switches_and_leaves_nothing_behind() {
    let _one = rtvirt_testkit::host_lock();
    let mounted_before = tracefs::mounted_at();
    let state = tempfile::tempdir().unwrap();
    let instance = Instance::create(state.path(), &["sched/sched_switch", "nosuch/event"], 256).unwrap();
    let path = instance.path().to_path_buf();
    assert!(path.is_dir() && path.file_name().unwrap().to_str().unwrap().starts_with("rtvirt-"));
    assert_eq!(instance.present, vec!["sched/sched_switch".to_string()]);
    assert_eq!(instance.absent, vec!["nosuch/event".to_string()]);
    assert_eq!(std::fs::read_dir(state.path().join("tracing")).unwrap().count(), 1, "journaled");
    let format = instance.format("sched/sched_switch").unwrap();
    let prev_comm = format.field("prev_comm").unwrap().clone();
    let mut readers: Vec<_> = online_cpus().into_iter().map(|c| instance.reader(c).unwrap()).collect();
    instance.set_on(true).unwrap();
    std::thread::Builder::new()
        .name("h15-sleeper".into())
        .spawn(|| (0..20).for_each(|_| std::thread::sleep(Duration::from_millis(1))))
        .unwrap()
        .join()
        .unwrap();
    instance.set_on(false).unwrap();
    let (mut switches, mut last_ts) = (0, 0u64);
    let _ = last_ts;
    for r in &mut readers {
        last_ts = 0;
        while let Some(page) = r.next_page().unwrap() {
            for e in page.events() {
                assert!(e.ts >= last_ts, "one CPU's events come in time order");
                last_ts = e.ts;
                let id = u16::from_le_bytes([e.data[0], e.data[1]]);
                if id == format.id && prev_comm.text(e.data) == Some("h15-sleeper") {
                    switches += 1;
                }
            }
        }
    }
    assert!(switches >= 20, "20 sleeps switch the thread out 20 times at least, saw {switches}");
    drop(readers);
    drop(instance);
    assert!(!path.exists(), "instance removed");
    assert_eq!(tracefs::mounted_at(), mounted_before, "tracefs left mounted as it was");
    assert_eq!(std::fs::read_dir(state.path().join("tracing")).unwrap().count(), 0, "record removed");
}

#[test]
fn the_instance_of_a_killed_process_is_removed_by_the_next_run() {
    let _one = rtvirt_testkit::host_lock();
    let mounted_before = tracefs::mounted_at();
    let state = tempfile::tempdir().unwrap();
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let pid = dead.id();
    dead.wait().unwrap();
    let root = mounted_before.clone().unwrap_or_else(|| PathBuf::from(tracefs::MOUNT_POINT));
    let path = root.join("instances").join(format!("rtvirt-{pid}"));
    let change = Change::TraceInstance { path: path.clone(), mounted: mounted_before.is_none().then(|| root.clone()) };
    std::fs::create_dir_all(state.path().join("tracing")).unwrap();
    let record = state.path().join("tracing").join(format!("{pid}-1.json"));
    std::fs::write(&record, serde_json::to_string(&change).unwrap()).unwrap();
    change.perform().unwrap();
    std::fs::write(path.join("events/sched/sched_switch/enable"), "1").unwrap();
    assert!(path.is_dir());
    // its second instance (`--explain`'s IPI senders), made once tracefs was mounted by the first
    let second = root.join("instances").join(format!("rtvirt-{pid}-ipi"));
    let second_change = Change::TraceInstance { path: second.clone(), mounted: None };
    let second_record = state.path().join("tracing").join(format!("{pid}-1-ipi.json"));
    std::fs::write(&second_record, serde_json::to_string(&second_change).unwrap()).unwrap();
    second_change.perform().unwrap();
    let said = tracefs::remove_stale(state.path());
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said.iter().all(|s| s.contains(&pid.to_string())), "{said:?}");
    assert!(!path.exists() && !second.exists(), "the killed process's instances are gone");
    assert!(!record.exists() && !second_record.exists(), "and their records");
    assert_eq!(tracefs::mounted_at(), mounted_before);
}

/// Two instances at once, the one whose creation mounted tracefs removed first (two runs at once,
/// or one run's two instances in that order): the one removed last unmounts it. Before, tracefs
/// stayed mounted: the first saw the other instance, the last had not mounted it.
#[test]
fn the_last_instance_out_unmounts_what_rtvirt_mounted() {
    let _one = rtvirt_testkit::host_lock();
    let mounted_before = tracefs::mounted_at();
    let state = tempfile::tempdir().unwrap();
    let first = tracefs::Instance::create(state.path(), &["sched/sched_switch"], 64).unwrap();
    let second = tracefs::Instance::create_part(state.path(), Some("second"), &["sched/sched_switch"], 64).unwrap();
    drop(first);
    assert!(second.path().is_dir() && tracefs::mounted_at().is_some(), "still in use by the second");
    drop(second);
    assert_eq!(tracefs::mounted_at(), mounted_before, "tracefs left mounted as it was");
}
