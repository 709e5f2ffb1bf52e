//! Fleet-size inputs (issue 43): a scenario is bounded by what it costs to read, not by its size.
//! The TOML shapes that cost the reader far more memory than their size are refused at their
//! line and field, in bounded memory (peak RSS of the real binary under `/usr/bin/time -v`); a
//! fleet of 10,000 guests is planned from TOML and from the same document in JSON alike.

mod rss_support;
mod schema_support;

use std::path::{Path, PathBuf};
use std::process::Output;

/// Peak RSS the refusals stay under (4 MiB of 8-level inline tables took ~1.2 GB to read).
const BOUND_KIB: u64 = 200 * 1024;

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `count` copies of `item`, comma-separated, as the array `z` of a scenario's host.
fn host_array(item: &str, count: usize) -> String {
    format!("[host]\ncores = 1\nz = [{}]\n", vec![item; count].join(","))
}

#[test]
fn pathological_toml_shapes_are_refused_at_their_place_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mib = 1 << 20;
    let nested = "{a={b={c={d={e={f={g={h=1}}}}}}}}";
    let cases = [
        // issue 14's file, 4 MiB: the 9th level (array + 8 tables) of the first element
        (
            "nested.toml",
            host_array(nested, 4 * mib / nested.len()),
            "line 3, column 27: field `host.z.a.b.c.d.e.f.g`",
            "nested 9 deep: expected at most 8 levels",
        ),
        // 4 MiB of small inline tables: one per 6 bytes
        ("dense.toml", host_array("{a=1}", 4 * mib / 6), "line 3, column ", "arrays and inline tables in 4194"),
        (
            "key.toml",
            format!("[host]\ncores = 1\n{} = 1\n", "k".repeat(300)),
            "line 3, column 1: field `host.kkk",
            "a key of 300 bytes: expected a name of at most 128 bytes",
        ),
        (
            "dotted.toml",
            format!("[host]\ncores = 1\n{}b = 1\n", "a.".repeat(100_000)),
            "line 3, column 19: field `host.a.a.a",
            "dotted keys nested 9 deep",
        ),
    ];
    for (name, text, at, what) in cases {
        let file = write(dir.path(), name, &text);
        let (o, kib) = rss_support::rtvirt_peak_kib(&["plan", file.to_str().unwrap()]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert!(e.contains(&format!("{name}:{at}")) && e.contains(what), "{name}: expected {at:?} and {what:?} in {e}");
        assert!(kib < BOUND_KIB, "{name}: {} bytes in, peak RSS {kib} KiB", text.len());
    }
}

/// A deterministic fleet of `guests` one-vCPU EDF guests of `tasks` tasks on `cores` cores, as
/// the TOML and the JSON of the same document.
fn fleet(guests: usize, tasks: usize, cores: usize) -> (String, String) {
    let mut x: u64 = 1;
    let mut next = |n: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let periods = [1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000];
    let (mut toml, mut json) = (format!("name = \"fleet\"\n[host]\ncores = {cores}\n"), Vec::new());
    for g in 0..guests {
        let ts: Vec<(String, String)> = (0..tasks)
            .map(|_| {
                let p = periods[next(16) as usize];
                (format!("{p}ms"), format!("{}us", (p * (10 + next(90))).max(1)))
            })
            .collect();
        let t_toml: Vec<String> =
            ts.iter().enumerate().map(|(i, (p, w))| format!("{{name=\"t{i}\",period=\"{p}\",wcet=\"{w}\"}}")).collect();
        toml += &format!("[[guest]]\nname = \"vm{g}\"\nscheduler = \"edf\"\ntask = [{}]\n", t_toml.join(","));
        let t_json: Vec<String> = ts
            .iter()
            .enumerate()
            .map(|(i, (p, w))| format!("{{\"name\":\"t{i}\",\"period\":\"{p}\",\"wcet\":\"{w}\"}}"))
            .collect();
        json.push(format!("{{\"name\":\"vm{g}\",\"scheduler\":\"edf\",\"task\":[{}]}}", t_json.join(",")));
    }
    let json = format!("{{\"name\":\"fleet\",\"host\":{{\"cores\":{cores}}},\"guest\":[\n{}\n]}}\n", json.join(",\n"));
    (toml, json)
}

#[test]
fn a_fleet_of_10000_guests_is_planned_from_toml_and_json_alike() {
    let dir = tempfile::tempdir().unwrap();
    let (toml, json) = fleet(10_000, 2, 4096);
    assert!(toml.len() > 1 << 20, "larger than the old 1 MiB limit: {} bytes", toml.len());
    let mut plans = Vec::new();
    for (name, text) in [("fleet.toml", &toml), ("fleet.json", &json)] {
        let file = write(dir.path(), name, text);
        let (o, kib) = rss_support::rtvirt_peak_kib(&["plan", file.to_str().unwrap(), "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert!(
            kib < 60 * (text.len() as u64 / 1024) + 100 * 1024,
            "{name}: {} bytes in, peak RSS {kib} KiB",
            text.len()
        );
        plans.push(o.stdout);
    }
    let plan: serde_json::Value = serde_json::from_slice(&plans[0]).unwrap();
    assert_eq!(plan["guests"].as_array().map(Vec::len), Some(10_000));
    assert_eq!(plan["feasible"], true);
    assert!(plans[0] == plans[1], "the TOML and the JSON of one fleet plan alike");
}

#[test]
fn json_scenarios_get_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (_, json) = fleet(3, 2, 2);
    let cases = [
        (
            json.replace("\"edf\",\"task\":[{\"name\":\"t0\"", "\"edf\",\"task\":[{\"nme\":\"t0\""),
            "bad.json:line 2, column ",
            "field `guest[0].task[0].nme`: unknown field `nme`",
        ),
        (
            json.replace("{\"cores\":2}", "{\"cores\":0}"),
            "bad.json: field `host.cores`",
            "0 cores: expected a whole number from 1 to",
        ),
        (json.replace("]}\n", "\n"), "bad.json:line 6", "EOF while parsing a list"),
        (
            json.replacen(
                "\"edf\",",
                &format!("\"edf\",\"server_periods\":{}{},", "[".repeat(200), "]".repeat(200)),
                1,
            ),
            "bad.json:line 2, column ",
            "recursion limit exceeded",
        ),
    ];
    for (text, at, what) in cases {
        let file = write(dir.path(), "bad.json", &text);
        let (o, _) = rss_support::rtvirt_peak_kib(&["plan", file.to_str().unwrap()]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains(at) && e.contains(what), "expected {at:?} and {what:?} in {e}");
    }
}

#[test]
fn a_host_may_have_100000_cores_and_a_guest_at_most_4096_vcpus() {
    let dir = tempfile::tempdir().unwrap();
    let (toml, _) = fleet(3, 2, 100_000);
    let file = write(dir.path(), "big.toml", &toml);
    let (o, _) = rss_support::rtvirt_peak_kib(&["plan", file.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["cores_used"], 1, "three light guests share a core");
    let many = write(
        dir.path(),
        "vcpus.toml",
        &toml.replacen("scheduler = \"edf\"\n", "scheduler = \"edf\"\nvcpus = 4097\n", 1),
    );
    let (o, _) = rss_support::rtvirt_peak_kib(&["plan", many.to_str().unwrap()]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("vcpus.toml:line 7, column 1: field `guest[0].vcpus`")
            && e.contains("4097 vCPUs: expected at most 4096"),
        "{e}"
    );
}

/// docs/schema/scenario.schema.json describes what the JSON reader takes: every shipped scenario
/// (TOML, as the same document in JSON), a fleet as the tests and scripts/fleet-scenario.py write
/// it; a misspelled field is invalid there as it is refused by the reader.
#[test]
fn json_scenarios_match_the_published_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            schema_support::assert_valid("scenario", &serde_json::to_value(doc).unwrap());
            checked += 1;
        }
    }
    assert!(checked >= 10, "the shipped scenarios: {checked}");
    let (_, json) = fleet(3, 2, 2);
    schema_support::assert_valid("scenario", &serde_json::from_str(&json).unwrap());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fleet-scenario.py");
    let o = std::process::Command::new("python3").arg(&script).args(["5", "3", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    schema_support::assert_valid("scenario", &serde_json::from_slice(&o.stdout).unwrap());
    let misspelled: serde_json::Value =
        serde_json::from_str(&json.replacen("\"name\":\"t0\"", "\"nme\":\"t0\"", 1)).unwrap();
    let schema = rtvirt_model::schema::committed_value("scenario");
    assert!(!jsonschema::is_valid(&schema, &misspelled), "an unknown field is invalid");
}
