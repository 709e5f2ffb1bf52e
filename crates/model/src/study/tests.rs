use super::*;

const GOOD: &str = r#"
name = "tuning"
repeats = 3
duration = "2s"
where = ["host", "vm"]
guest_kernels = ["rt", "nrt"]

[[configuration]]
name = "stock"

[[configuration]]
name = "tuned"
profile = "p.toml"

[[load]]
name = "idle"

[[measure]]
name = "timer"
kind = "timer"
options = { interval = "1ms", cpus = "0" }

[[measure]]
name = "tasks"
kind = "tasks"
options = { scenario = "s.toml" }
"#;

#[test]
fn cells_are_the_product_in_the_stated_order() {
    let s = Study::from_toml(GOOD, Some(Path::new("dir/study.toml"))).unwrap();
    let ids: Vec<String> = s.cells().into_iter().map(|c| c.id).collect();
    assert_eq!(ids.len(), 2 * 3 * 2, "configurations x (host + 2 guest kernels) x measurements");
    assert_eq!(ids[0], "stock/host/idle/timer");
    assert_eq!(ids[1], "stock/host/idle/tasks");
    assert_eq!(ids[2], "stock/vm-rt/idle/timer");
    assert_eq!(ids[6], "tuned/host/idle/timer");
    assert_eq!(s.configurations[1].profile.as_deref(), Some(Path::new("dir/p.toml")), "relative to the file");
    assert_eq!(s.measurements[1].options["scenario"], OptionValue::Text("dir/s.toml".into()));
}

#[test]
fn defaults_are_one_configuration_one_load_on_the_host() {
    let s = Study::from_toml(
        "name = \"x\"\nrepeats = 1\nduration = \"1s\"\n[[measure]]\nname = \"t\"\nkind = \"timer\"\n",
        None,
    )
    .unwrap();
    let cells = s.cells();
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0].id, "none/host/none/t");
}

fn error(text: &str) -> InputError {
    Study::from_toml(text, Some(Path::new("bad.toml"))).unwrap_err()
}

#[test]
fn bad_studies_are_located_errors() {
    let head = "name = \"x\"\nrepeats = 1\nduration = \"1s\"\n";
    let m = "[[measure]]\nname = \"t\"\nkind = \"timer\"\n";
    let cases = [
        (format!("{head}{m}[[measure]]\nname = \"t\"\nkind = \"timer\"\n"), "measure[1].name", 8, "used twice"),
        (format!("{head}[[measure]]\nname = \"t\"\nkind = \"latency\"\n"), "measure[0].kind", 6, "unknown variant"),
        (format!("{head}{m}options = {{ duration = \"5s\" }}\n"), "measure[0].options.duration", 7, "set by the study"),
        (format!("{head}where = [\"cloud\"]\n{m}"), "where[0]", 4, "unknown variant"),
        (format!("{head}guest_kernels = [\"xen\"]\n{m}"), "guest_kernels[0]", 4, "expected \"rt\" or \"nrt\""),
        (format!("name = \"x\"\nrepeats = 0\nduration = \"1s\"\n{m}"), "repeats", 2, "at least 1"),
        (format!("name = \"x y\"\nrepeats = 1\nduration = \"1s\"\n{m}"), "name", 1, "expected 1 to 64"),
        (
            format!("{head}[[configuration]]\nname = \"a\"\nprofile = \"p\"\nplan = \"q\"\n{m}"),
            "configuration[0].plan",
            7,
            "not both",
        ),
        (format!("{head}{m}bogus = 1\n"), "measure[0]", 7, "unknown field"),
    ];
    for (text, field, line, words) in cases {
        let e = error(&text);
        assert_eq!(e.at.file.as_deref(), Some(Path::new("bad.toml")), "{e}");
        assert!(e.at.field.as_deref().is_some_and(|f| f.starts_with(field)), "{field}: {e}");
        assert_eq!(e.at.line_col.map(|l| l.0), Some(line), "{field}: {e}");
        assert!(e.message.contains(words), "{field}: {e}");
    }
    let e = error(head);
    assert!(e.to_string().contains("measure"), "{e}");
}

#[test]
fn a_huge_matrix_is_refused() {
    let e = error("name = \"x\"\nrepeats = 100001\nduration = \"1s\"\n[[measure]]\nname = \"t\"\nkind = \"timer\"\n");
    assert!(e.message.contains("at most 100000"), "{e}");
}

#[test]
fn a_place_or_guest_kernel_listed_twice_is_refused() {
    let m = "[[measure]]\nname = \"t\"\nkind = \"timer\"\n";
    for (lists, field) in [
        ("where = [\"host\", \"host\"]\n", "where[1]"),
        ("where = [\"vm\", \"host\"]\nguest_kernels = [\"nrt\", \"nrt\"]\n", "guest_kernels[1]"),
    ] {
        let e = error(&format!("name = \"x\"\nrepeats = 1\nduration = \"1s\"\n{lists}{m}"));
        assert_eq!(e.at.field.as_deref(), Some(field), "{e}");
        assert!(e.at.line_col.is_some() && e.message.contains("listed twice"), "{e}");
    }
}

#[test]
fn runs_are_counted_without_overflow_also_for_repeats_given_later() {
    let mut s = Study::from_toml(GOOD, None).unwrap();
    for repeats in [u32::MAX, 1 << 31, 8334, 0] {
        let e = s.set_repeats(repeats, "--repeats").unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("--repeats"), "{e}");
    }
    assert_eq!(s.repeats, 3, "a refused --repeats changes nothing");
    s.set_repeats(8333, "--repeats").unwrap();
    assert_eq!(s.repeats, 8333, "12 cells x 8333 runs = 99,996 runs");
}
