//! `rtvirt plan` on valid guests whose exact analysis would need more check points than the
//! planner's bound (periods 60 min next to 10 us, or 2 ns at utilisation 1): a bounded answer,
//! exit 2 naming the file, the guest and the reason, never an abort. Time and memory are measured
//! in docs/PERFORMANCE.md, not asserted here.

use std::process::Command;

fn scenario(scheduler: &str, tasks: &[(&str, &str)]) -> String {
    let mut t = format!(
        "name = \"bounds\"\n[host]\ncores = 1\n\n[[guest]]\nname = \"plc\"\nscheduler = \"{scheduler}\"\n\
         server_periods = [\"1ms\"]\n"
    );
    for (i, (period, wcet)) in tasks.iter().enumerate() {
        t += &format!("\n[[guest.task]]\nname = \"t{i}\"\nperiod = \"{period}\"\nwcet = \"{wcet}\"\n");
        if scheduler == "fp" {
            t += &format!("priority = {}\n", tasks.len() - i);
        }
    }
    t
}

#[test]
fn too_large_guests_exit_2_with_the_guest_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("fp", vec![("10us", "1us"), ("60min", "1s")]),
        ("fp", vec![("100us", "1us"), ("60min", "1s")]),
        ("edf", vec![("2ns", "1ns"), ("60min", "30min")]),
    ];
    for (scheduler, tasks) in cases {
        let file = dir.path().join("s.toml");
        std::fs::write(&file, scenario(scheduler, &tasks)).unwrap();
        for extra in [&[][..], &["--max-rho"], &["--format", "json"]] {
            let o = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
                .env("RTVIRT_HOST", "ideal")
                .args([&["plan", file.to_str().unwrap()][..], extra].concat())
                .output()
                .unwrap();
            let e = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{scheduler} {tasks:?} {extra:?}: {e}");
            assert!(e.contains("s.toml:line 5") && e.contains("guest[0]") && e.contains("\"plc\""), "{e}");
            assert!(e.contains("too large to analyse exactly") && e.contains("check points"), "{e}");
            assert!(o.stdout.is_empty(), "nothing printed as a plan");
        }
    }
}
