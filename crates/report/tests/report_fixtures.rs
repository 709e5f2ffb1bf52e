//! Reports built from result files of every kind (hand-built fixtures in tests/fixtures, made
//! by make_fixtures.py; timer_explain.json is the output of a real `rtvirt measure timer --cpus 1
//! --duration 2s --explain --format json`): the sections, charts, highlighted differences and
//! errors they produce.

use rtvirt_report::doc::{Mark, Report};
use rtvirt_report::{build_report, load_inputs, render, ReportFormat};
use std::path::PathBuf;

const ALL: &[&str] = &[
    "sim_rho9.json",
    "tasks_measured.json",
    "sim_rho1.json",
    "sim_rho5.json",
    "timer_idle.json",
    "timer_load.json",
    "timer_explain.json",
    "net_rtt.json",
    "netsim_vanilla.json",
    "netsim_outsourcing.json",
    "plan.json",
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Every fixture is valid against the committed schema of its kind (`docs/schema/`).
#[test]
fn fixtures_are_valid_against_the_published_schemas() {
    for name in ALL {
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap();
        let schema_name = if doc["schema"] == "rtvirt.plan/v1" { "plan" } else { "results" };
        let schema = rtvirt_model::schema::committed_value(schema_name);
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> =
            validator.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{name}: {}", errors.join("\n"));
    }
}

fn report_of(names: &[&str]) -> Report {
    let paths: Vec<PathBuf> = names.iter().map(|n| fixture(n)).collect();
    build_report("test", &load_inputs(&paths).expect("fixtures load"))
}

fn datum_count(svg: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("chart is well-formed XML");
    doc.descendants().filter(|n| n.attribute("class") == Some("datum")).count()
}

#[test]
fn every_chart_kind_appears_with_data() {
    let r = report_of(ALL);
    let kinds: Vec<&str> = r.figures().map(|f| f.kind).collect();
    for k in [
        "exceedance",
        "histogram",
        "boxplot",
        "dsr-rho",
        "dsr-tasks",
        "response-times",
        "bandwidth",
        "segments",
        "timeseries",
    ] {
        assert!(kinds.contains(&k), "no {k} chart in {kinds:?}");
    }
    for f in r.figures() {
        assert!(datum_count(&f.svg) > 0, "chart {} has no data marks", f.title);
    }
}

#[test]
fn each_kind_alone_gives_its_sections() {
    let cases: &[(&str, &[&str])] = &[
        ("timer_idle.json", &["exceedance", "histogram", "boxplot", "timeseries"]),
        ("net_rtt.json", &["exceedance", "histogram", "boxplot"]),
        ("timer_explain.json", &["exceedance", "histogram", "boxplot", "causes", "timelines"]),
        ("sim_rho5.json", &["dsr-tasks", "response-times"]),
        ("tasks_measured.json", &["dsr-tasks", "response-times"]),
        ("netsim_vanilla.json", &["exceedance", "histogram", "boxplot", "segments"]),
        ("plan.json", &["bandwidth"]),
    ];
    for (file, expected) in cases {
        let r = report_of(&[file]);
        let kinds: Vec<&str> = r.figures().map(|f| f.kind).collect();
        assert_eq!(&kinds, expected, "{file}");
    }
}

#[test]
fn box_plot_counts_one_box_per_result() {
    let r = report_of(&["timer_idle.json", "timer_load.json"]);
    let boxplot = r.figures().find(|f| f.kind == "boxplot").unwrap();
    let doc = roxmltree::Document::parse(&boxplot.svg).unwrap();
    let boxes = doc.descendants().filter(|n| n.has_tag_name("rect") && n.attribute("class") == Some("datum")).count();
    assert_eq!(boxes, 2);
}

#[test]
fn slower_result_is_highlighted_worse_against_baseline() {
    let r = report_of(&["timer_idle.json", "timer_load.json"]);
    let stats = r.tables().find(|t| t.caption.contains("statistics")).unwrap();
    let load_row = &stats.rows[1];
    assert!(load_row[0].text.contains("load"));
    let p99 = stats.header.iter().position(|h| h == "p99").unwrap();
    assert_eq!(load_row[p99].mark, Mark::Worse, "{:?}", load_row[p99]);
    assert!(load_row[p99].text.contains("(+"), "{}", load_row[p99].text);
    assert!(stats.rows[0].iter().all(|c| c.mark == Mark::None), "baseline row is never marked");
}

#[test]
fn better_method_is_highlighted_better() {
    let r = report_of(&["netsim_vanilla.json", "netsim_outsourcing.json"]);
    let stats = r.tables().find(|t| t.caption.contains("Flow rt")).unwrap();
    let p99 = stats.header.iter().position(|h| h == "p99").unwrap();
    assert_eq!(stats.rows[1][p99].mark, Mark::Better);
}

#[test]
fn simulated_and_measured_tasks_side_by_side() {
    let r = report_of(&["sim_rho9.json", "tasks_measured.json"]);
    let t = r.tables().find(|t| t.caption.starts_with("Tasks")).unwrap();
    let first = &t.rows[0][0].text;
    let same: Vec<_> = t.rows.iter().filter(|row| &row[0].text == first).collect();
    assert_eq!(same.len(), 2, "one row per result for each task");
    assert_eq!(same[1][1].text, "measured rho=0.9");
}

#[test]
fn dsr_versus_rho_has_one_point_per_rho() {
    let r = report_of(&["sim_rho1.json", "sim_rho5.json", "sim_rho9.json"]);
    let f = r.figures().find(|f| f.kind == "dsr-rho").unwrap();
    let doc = roxmltree::Document::parse(&f.svg).unwrap();
    let points =
        doc.descendants().filter(|n| n.has_tag_name("circle") && n.attribute("class") == Some("datum")).count();
    assert_eq!(points, (3 + 1) * 3, "3 guests and their mean x 3 rho values");
    for guest in ["vm1", "vm2", "vm3", "mean"] {
        assert!(f.svg.contains(&format!(">{guest}</text>")), "the {guest} curve is labelled");
    }
    assert!(report_of(&["sim_rho5.json"]).figures().all(|f| f.kind != "dsr-rho"), "one rho: no curve");
}

#[test]
fn environment_differences_are_marked() {
    let r = report_of(&["timer_idle.json", "timer_load.json"]);
    let env = r.tables().find(|t| t.caption.starts_with("Environment")).unwrap();
    let row = |f: &str| env.rows.iter().find(|row| row[0].text == f).unwrap();
    assert_eq!(row("load")[1].mark, Mark::Differs);
    assert_eq!(row("kernel")[1].mark, Mark::None);
}

#[test]
fn html_is_self_contained() {
    let html = render(&report_of(ALL), ReportFormat::Html);
    assert!(html.starts_with("<!DOCTYPE html>"));
    for bad in ["<script", "src=", "href=\"http", "@import", "url("] {
        assert!(!html.contains(bad), "report refers to something outside itself: {bad}");
    }
    let without_ns = html.replace("http://www.w3.org/2000/svg", "");
    assert!(!without_ns.contains("http"), "no network addresses");
}

#[test]
fn markdown_has_tables_and_marks_but_no_markup() {
    let md = render(&report_of(&["timer_idle.json", "timer_load.json", "plan.json"]), ReportFormat::Markdown);
    assert!(md.starts_with("# test"));
    assert!(md.contains("| result | kind | samples |"));
    assert!(md.contains("** ▲"), "worse cells are marked");
    assert!(md.contains("*Chart (in the HTML report): Timer wake-up latency: exceedance.*"));
    assert!(!md.contains("<svg") && !md.contains("<td"));
}

#[test]
fn same_label_twice_gets_unique_names() {
    let inputs = load_inputs(&[fixture("timer_idle.json"), fixture("timer_idle.json")]).unwrap();
    assert_ne!(inputs[0].name, inputs[1].name);
}

#[test]
fn bad_inputs_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let e = load_inputs(&[write("a.json", "{\n  \"schema\": \"rtvirt.results/v1\",\n  oops\n}")]).unwrap_err();
    assert!(e.to_string().contains("a.json:line 3"), "{e}");
    let e = load_inputs(&[write("b.json", r#"{"schema":"other/v1"}"#)]).unwrap_err();
    assert!(e.to_string().contains("field `schema`") && e.to_string().contains("b.json"), "{e}");
    let e = load_inputs(&[write("c.json", r#"{"kind":"timer"}"#)]).unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
    let e = load_inputs(&[write("d.json", r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":"ten"}"#)])
        .unwrap_err();
    assert!(e.to_string().contains("d.json") && e.to_string().contains("line 1"), "{e}");
    let e = load_inputs(&[dir.path().join("missing.json")]).unwrap_err();
    assert!(e.to_string().contains("missing.json") && e.to_string().contains("cannot read"), "{e}");
    assert!(load_inputs(&[]).is_err());
}

#[test]
fn percentile_only_results_still_chart() {
    // A result with no histogram and no p25 (older producers): CDF through percentiles, box from p50.
    let text = std::fs::read_to_string(fixture("net_rtt.json")).unwrap().replace("\"p25\"", "\"p25_unused\"");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.json");
    std::fs::write(&p, text).unwrap();
    let r = build_report("t", &load_inputs(&[p]).unwrap());
    let b = r.figures().find(|f| f.kind == "boxplot").unwrap();
    assert!(b.svg.contains("box from p50"));
    let exceedance = r.figures().find(|f| f.kind == "exceedance").unwrap();
    assert!(datum_count(&exceedance.svg) >= 8, "percentile points are marked");
}

#[test]
fn bandwidth_chart_shows_every_host_core() {
    let text = std::fs::read_to_string(fixture("plan.json")).unwrap().replacen(
        "\"model\": \"prm\",",
        "\"model\": \"prm\", \"cores\": 4,",
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plan4.json");
    std::fs::write(&p, text).unwrap();
    let r = build_report("t", &load_inputs(&[p]).unwrap());
    let f = r.figures().find(|f| f.kind == "bandwidth").unwrap();
    assert!(f.svg.contains("core 1<") && f.svg.contains("core 3 (unused)"), "{}", f.svg);
    assert_eq!(datum_count(&f.svg), 3, "one bar per placed guest");
}

#[test]
fn dsr_versus_rho_section_alone() {
    let paths: Vec<PathBuf> =
        ["sim_rho1.json", "sim_rho5.json", "sim_rho9.json", "tasks_measured.json"].iter().map(|n| fixture(n)).collect();
    let inputs = load_inputs(&paths).unwrap();
    let sec = rtvirt_report::build::dsr_versus_rho_section("Prediction", &inputs).expect("three rhos");
    assert_eq!(sec.blocks.len(), 3, "chart, table and the misses per task");
    assert!(rtvirt_report::build::dsr_versus_rho_section("x", &inputs[..1]).is_none(), "one rho: no curve");
}

/// Inputs holding what the model's own readers (`Results::from_file`, `Plan::from_file`) read,
/// under the names the loader gave.
fn as_the_model_reads(
    loaded: &[rtvirt_report::Input],
    docs: Vec<rtvirt_report::input::Document>,
) -> Vec<rtvirt_report::Input> {
    loaded
        .iter()
        .zip(docs)
        .map(|(i, doc)| rtvirt_report::Input { name: i.name.clone(), path: i.path.clone(), doc, intervals: None })
        .collect()
}

fn html_of(inputs: &[rtvirt_report::Input]) -> String {
    render(&build_report("same", inputs), ReportFormat::Html)
}

/// The loader streams arrays, reads documents without a JSON tree and keeps intervals as points:
/// the report is the one built from what the model's readers give, for every fixture, an array
/// (with intervals, stalls and per-CPU histograms) and interval report lines before a document.
#[test]
fn the_loader_reports_what_the_model_reads() {
    use rtvirt_model::results::{Interval, Results};
    use rtvirt_report::input::Document;
    let paths: Vec<PathBuf> = ALL.iter().map(|n| fixture(n)).collect();
    let loaded = load_inputs(&paths).unwrap();
    let docs = paths
        .iter()
        .map(|p| match rtvirt_model::plan::Plan::from_file(p) {
            Ok(plan) => Document::Plan(Box::new(plan)),
            Err(_) => Document::Results(Box::new(Results::from_file(p).unwrap())),
        })
        .collect();
    assert!(html_of(&loaded).contains("Per-interval maxima"), "the fixtures draw intervals");
    assert_eq!(html_of(&loaded), html_of(&as_the_model_reads(&loaded, docs)));

    let fuzz = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz");
    let array = fuzz.join("array.json");
    let loaded = load_inputs(std::slice::from_ref(&array)).unwrap();
    let elements: Vec<Results> = serde_json::from_str(&std::fs::read_to_string(&array).unwrap()).unwrap();
    assert_eq!(loaded.len(), 3);
    assert!(loaded[0].results().unwrap().cpus[0].histogram_ns.is_none(), "per-CPU histograms are dropped");
    let docs = elements.into_iter().map(|r| Document::Results(Box::new(r))).collect();
    assert_eq!(html_of(&loaded), html_of(&as_the_model_reads(&loaded, docs)));

    let lines = fuzz.join("interval-lines.json");
    let loaded = load_inputs(std::slice::from_ref(&lines)).unwrap();
    let text = std::fs::read_to_string(&lines).unwrap();
    let values: Vec<serde_json::Value> =
        serde_json::Deserializer::from_str(&text).into_iter().collect::<Result<_, _>>().unwrap();
    let (doc, reports) = values.split_last().unwrap();
    let mut r: Results = serde_json::from_value(doc.clone()).unwrap();
    r.intervals = Some(reports.iter().map(|v| serde_json::from_value::<Interval>(v.clone()).unwrap()).collect());
    assert_eq!(loaded[0].interval_points().len(), 4, "two lines of two CPUs");
    assert_eq!(html_of(&loaded), html_of(&as_the_model_reads(&loaded, vec![Document::Results(Box::new(r))])));
}

/// Errors of the streaming paths are located: an element of an array, an interval report, a
/// bad `intervals` list, and a second document in one file.
#[test]
fn streamed_inputs_give_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let doc = r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":1}"#;
    let e = load_inputs(&[write(
        "a.json",
        &format!("[\n{doc},\n{doc},\n{{\"schema\":\"rtvirt.results/v1\",\"kind\":\"timer\",\"duration_ns\":-1}}\n]"),
    )])
    .unwrap_err();
    assert_eq!(e.at.field.as_deref(), Some("[2]"), "{e}");
    assert!(e.to_string().contains("a.json") && e.message.contains("not an rtvirt.results/v1 document"), "{e}");
    let e = load_inputs(&[write("s.json", &format!("[\n{doc},\n{{\"schema\": oops}}\n]"))]).unwrap_err();
    assert!(e.to_string().contains("s.json:line 3"), "{e}");
    let e = load_inputs(&[write(
        "b.json",
        &format!("{{\"type\":\"interval\",\"t_ns\":1}}\n{{\"type\":\"interval\",\"t_ns\":\"x\"}}\n{doc}\n"),
    )])
    .unwrap_err();
    assert!(e.to_string().contains("b.json:line 2") && e.message.contains("interval report 2"), "{e}");
    let bad_intervals =
        doc.replace("\"duration_ns\":1", "\"duration_ns\":1,\n\"intervals\":[{\"t_ns\":1},\n{\"t_ns\":true}]");
    let e = load_inputs(&[write("c.json", &bad_intervals)]).unwrap_err();
    assert!(e.to_string().contains("c.json:line 3"), "{e}");
    let e = load_inputs(&[write("d.json", "[]")]).unwrap_err();
    assert!(e.to_string().contains("d.json:line 1") && e.message.contains("empty array"), "{e}");
    let e = load_inputs(&[write("e.json", &format!("{doc}\n{doc}\n"))]).unwrap_err();
    assert!(e.to_string().contains("e.json:line 2") && e.message.contains("second document"), "{e}");
}

/// The tail is on the charts: each timer result's maximum is labelled on the exceedance chart and
/// the histogram, and the exceedance axis reaches one sample in a million.
#[test]
fn charts_show_the_tail() {
    let r = report_of(&["timer_idle.json", "timer_load.json"]);
    let inputs = load_inputs(&[fixture("timer_idle.json"), fixture("timer_load.json")]).unwrap();
    for kind in ["exceedance", "histogram"] {
        let f = r.figures().find(|f| f.kind == kind).unwrap();
        for i in &inputs {
            let max = i.results().unwrap().latency_ns.as_ref().unwrap().max as f64;
            let label = format!(">max {}</text>", rtvirt_report::units::fmt_ns(max));
            assert!(f.svg.contains(&label), "{kind}: {label} missing");
        }
    }
    let e = r.figures().find(|f| f.kind == "exceedance").unwrap();
    assert!(e.svg.contains(">1e-6</text>"), "the exceedance axis reaches 1e-6");
}

#[test]
fn verdict_leads_and_tasks_carry_their_period_and_deadline() {
    let r = report_of(&["plan.json", "sim_rho9.json", "tasks_measured.json"]);
    assert_eq!(r.sections[0].title, "Verdict");
    let rtvirt_report::doc::Block::Lead(text) = &r.sections[0].blocks[0] else { panic!("verdict first") };
    assert!(text.starts_with("Plan feasible on 2 core(s)") && text.contains("simulated deadline misses"), "{text}");
    let t = r.tables().find(|t| t.caption.starts_with("Tasks")).unwrap();
    let col = t.header.iter().position(|h| h == "period / deadline").expect("period / deadline column");
    let t1 = t.rows.iter().find(|row| row[0].text == "vm1/t1").unwrap();
    assert_eq!(t1[col].text, "25.0ms / 25.0ms");
    let inputs = r.tables().next().unwrap();
    let settings = inputs.header.iter().position(|h| h == "settings").unwrap();
    assert!(inputs.rows.iter().any(|row| row[settings].text.contains("rho 0.9")), "{:?}", inputs.rows);
}

#[test]
fn simulated_flows_and_measured_round_trips_share_a_chart() {
    let r = report_of(&["netsim_vanilla.json", "net_rtt.json"]);
    let f = r.figures().find(|f| f.title == "Simulated flow latency and measured round trip").expect("combined chart");
    assert!(f.svg.contains("(simulated)") && f.svg.contains("(measured)"));
    assert!(report_of(&["netsim_vanilla.json"]).figures().all(|f| !f.title.starts_with("Simulated flow")));
}

/// A sweep's cells are named by their parameters, and the per-task charts keep to a few results.
#[test]
fn many_results_keep_the_per_task_charts_readable() {
    let dir = tempfile::tempdir().unwrap();
    let cell = std::fs::read_to_string(fixture("sim_rho5.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&cell).unwrap();
    doc["label"] = "default".into();
    let cells: Vec<serde_json::Value> = (1..=9)
        .map(|seed| {
            let mut d = doc.clone();
            d["seed"] = seed.into();
            d
        })
        .collect();
    let p = dir.path().join("sweep.json");
    std::fs::write(&p, serde_json::to_string(&cells).unwrap()).unwrap();
    let r = build_report("t", &load_inputs(&[p]).unwrap());
    let names = &r.tables().next().unwrap().rows;
    assert_eq!(names[0][0].text, "default seed=1", "named by the parameter that differs");
    for kind in ["dsr-tasks", "response-times"] {
        let f = r.figures().find(|f| f.kind == kind).unwrap();
        let drawn = (1..=9).filter(|seed| f.svg.contains(&format!("default seed={seed}<"))).count();
        assert!(f.svg.contains("default seed=1<") && drawn == 6, "{kind}: the baseline and five more, {drawn} drawn");
    }
}
