//! The tables of results documents. Every table starts with the document's `scenario`, `rho` and
//! `seed` (the cell of a sweep) and ends with its `error`: a document that could not run (a sweep
//! cell) is one row with its error and nothing else, so a frame of a whole sweep shows every cell.

use crate::results::{HistogramBucket, Interval, Results};
use crate::stats::Summary;
use crate::tables::column::{Cell, Spec, Table};

/// The tables of a results document (`rtvirt export --table`, `Results.tasks()`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableName {
    /// One row per periodic task: jobs, misses, DSR and response-time statistics.
    Tasks,
    /// One row per guest (vCPU thread): CPU time, utilisation, cores, policy, reservation.
    Guests,
    /// One row per core: utilisation and CPU time.
    Cores,
    /// One row per network flow: latency statistics, throughput, drops.
    Flows,
    /// One row per latency statistic of the document: timer latency (all CPUs and per CPU),
    /// round trips, task response times, flow latencies.
    Latency,
    /// One row per histogram bucket (value, count) of every exact histogram.
    Histogram,
    /// One row per interval report (per CPU for `measure timer --interval-report` lines).
    Intervals,
}

impl TableName {
    pub const ALL: [TableName; 7] = [
        TableName::Tasks,
        TableName::Guests,
        TableName::Cores,
        TableName::Flows,
        TableName::Latency,
        TableName::Histogram,
        TableName::Intervals,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TableName::Tasks => "tasks",
            TableName::Guests => "guests",
            TableName::Cores => "cores",
            TableName::Flows => "flows",
            TableName::Latency => "latency",
            TableName::Histogram => "histogram",
            TableName::Intervals => "intervals",
        }
    }

    /// The table called `name`, or an error listing the tables.
    pub fn parse(name: &str) -> Result<TableName, crate::InputError> {
        TableName::ALL.into_iter().find(|t| t.as_str() == name).ok_or_else(|| {
            let names: Vec<&str> = TableName::ALL.iter().map(|t| t.as_str()).collect();
            crate::InputError::field("table", format!("\"{name}\": expected one of {}", names.join(", ")))
        })
    }

    /// The columns between the keys and `error`.
    fn columns(self) -> Vec<Spec> {
        match self {
            TableName::Tasks => {
                let mut c = vec![
                    Spec::category("guest"),
                    Spec::category("task"),
                    Spec::int("jobs").nullable(),
                    Spec::int("misses").nullable(),
                    Spec::float("dsr"),
                    Spec::int("unfinished").nullable(),
                ];
                c.extend(summary_columns(&SUMMARY_RESPONSE));
                c
            }
            TableName::Guests => vec![
                Spec::category("guest"),
                Spec::int("cpu_time_ns").nullable(),
                Spec::float("utilisation"),
                Spec::int("core").nullable(),
                Spec::text("cores"),
                Spec::category("policy"),
                Spec::int("runtime_ns").nullable(),
                Spec::int("deadline_ns").nullable(),
                Spec::int("period_ns").nullable(),
            ],
            TableName::Cores => vec![
                Spec::int("core").nullable(),
                Spec::float("utilisation"),
                Spec::int("cpu_time_ns").nullable(),
                Spec::int("time_squeeze").nullable(),
            ],
            TableName::Flows => {
                let mut c = vec![Spec::category("flow")];
                c.extend(summary_columns(&SUMMARY_LATENCY));
                c.extend([
                    Spec::float("throughput_bps"),
                    Spec::int("drops").nullable(),
                    Spec::int("sent").nullable(),
                    Spec::int("retransmits").nullable(),
                    Spec::int("packets_received").nullable(),
                    Spec::float("packets_per_s"),
                    Spec::float("requests_per_s"),
                ]);
                c
            }
            TableName::Latency => {
                let mut c = vec![Spec::category("metric"), Spec::category("name")];
                c.extend(summary_columns(&SUMMARY_PLAIN));
                c
            }
            TableName::Histogram => vec![
                Spec::category("metric"),
                Spec::category("name"),
                Spec::int("value_ns").nullable(),
                Spec::int("count").nullable(),
            ],
            TableName::Intervals => vec![
                Spec::int("interval").nullable(),
                Spec::int("t_ns").nullable(),
                Spec::int("start_ns").nullable(),
                Spec::int("end_ns").nullable(),
                Spec::int("cpu").nullable(),
                Spec::int("count").nullable(),
                Spec::int("max_ns").nullable(),
                Spec::float("mean_ns"),
                Spec::int("missed_periods").nullable(),
                Spec::bool("stall"),
            ],
        }
    }

    /// The rows of one document (without keys and error).
    fn rows(self, r: &Results) -> Vec<Vec<Cell>> {
        match self {
            TableName::Tasks => task_rows(r),
            TableName::Guests => guest_rows(r),
            TableName::Cores => r
                .cores
                .iter()
                .map(|c| {
                    let id = Cell::int(c.id.into());
                    vec![id, Cell::Float(c.utilisation), Cell::opt_int(c.cpu_time_ns), Cell::opt_int(c.time_squeeze)]
                })
                .collect(),
            TableName::Flows => flow_rows(r),
            TableName::Latency => latency_rows(r),
            TableName::Histogram => histogram_rows(r),
            TableName::Intervals => r.intervals.iter().flatten().flat_map(interval_rows).collect(),
        }
    }
}

/// The key columns every results table starts with, and the last one.
const KEYS: [Spec; 3] = [Spec::category("scenario"), Spec::float("rho"), Spec { nullable: true, ..Spec::int("seed") }];
const ERROR: Spec = Spec::text("error");

/// Table `name` of `documents`, their rows one after the other.
pub fn table(name: TableName, documents: &[&Results]) -> Table {
    let mut specs = KEYS.to_vec();
    specs.extend(name.columns());
    specs.push(ERROR);
    let width = specs.len();
    let mut table = Table::new(&specs);
    for r in documents {
        let keys = || {
            let scenario = r.scenario.as_deref().or(r.label.as_deref());
            vec![Cell::opt_text(scenario), Cell::opt_float(r.rho), Cell::opt_int(r.seed)]
        };
        if let Some(error) = &r.error {
            let mut row = keys();
            row.resize(width - 1, Cell::Null);
            row.push(Cell::text(error));
            table.push(row);
            continue;
        }
        for cells in name.rows(r) {
            let mut row = keys();
            row.extend(cells);
            row.push(Cell::Null);
            table.push(row);
        }
    }
    table
}

/// Column names of a latency summary: (prefix of counts and ns values, e.g. `response_`).
struct SummaryNames {
    count: &'static str,
    ns: [&'static str; 11],
}

const SUMMARY_RESPONSE: SummaryNames = SummaryNames {
    count: "response_count",
    ns: [
        "response_min_ns",
        "response_mean_ns",
        "response_sd_ns",
        "response_p50_ns",
        "response_p75_ns",
        "response_p90_ns",
        "response_p95_ns",
        "response_p99_ns",
        "response_p999_ns",
        "response_p9999_ns",
        "response_max_ns",
    ],
};
const SUMMARY_LATENCY: SummaryNames = SummaryNames {
    count: "latency_count",
    ns: [
        "latency_min_ns",
        "latency_mean_ns",
        "latency_sd_ns",
        "latency_p50_ns",
        "latency_p75_ns",
        "latency_p90_ns",
        "latency_p95_ns",
        "latency_p99_ns",
        "latency_p999_ns",
        "latency_p9999_ns",
        "latency_max_ns",
    ],
};
const SUMMARY_PLAIN: SummaryNames = SummaryNames {
    count: "count",
    ns: [
        "min_ns", "mean_ns", "sd_ns", "p50_ns", "p75_ns", "p90_ns", "p95_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns",
    ],
};

/// count, min, mean, sd, p50 ... p9999, max (mean and sd are floats).
fn summary_columns(names: &SummaryNames) -> Vec<Spec> {
    let mut c = vec![Spec::int(names.count).nullable()];
    for (i, name) in names.ns.iter().enumerate() {
        c.push(if (1..=2).contains(&i) { Spec::float(name) } else { Spec::int(name).nullable() });
    }
    c
}

fn summary_cells(s: Option<&Summary>) -> Vec<Cell> {
    let Some(s) = s else {
        return vec![Cell::Null; 12];
    };
    let mut c = vec![Cell::int(s.count), Cell::int(s.min), Cell::Float(s.mean), Cell::Float(s.sd)];
    c.extend([s.p50, s.p75, s.p90, s.p95, s.p99, s.p999, s.p9999, s.max].map(Cell::int));
    c
}

fn task_rows(r: &Results) -> Vec<Vec<Cell>> {
    r.tasks
        .iter()
        .map(|t| {
            let mut row = vec![
                Cell::text(&t.guest),
                Cell::text(&t.name),
                Cell::int(t.jobs),
                Cell::int(t.misses),
                Cell::Float(t.dsr),
                Cell::opt_int(t.unfinished),
            ];
            row.extend(summary_cells(Some(&t.response_ns)));
            row
        })
        .collect()
}

fn guest_rows(r: &Results) -> Vec<Vec<Cell>> {
    r.guests
        .iter()
        .map(|g| {
            let cores = g.cores.as_ref().map(|c| c.iter().map(u32::to_string).collect::<Vec<_>>().join(","));
            let reservation = g.reservation.as_ref();
            vec![
                Cell::text(&g.name),
                Cell::int(g.cpu_time_ns),
                Cell::Float(g.utilisation),
                Cell::opt_int(g.core.map(u64::from)),
                Cell::opt_text(cores.as_deref()),
                Cell::opt_text(g.policy.as_deref()),
                Cell::opt_int(reservation.map(|r| r.runtime_ns)),
                Cell::opt_int(reservation.map(|r| r.deadline_ns)),
                Cell::opt_int(reservation.map(|r| r.period_ns)),
            ]
        })
        .collect()
}

fn flow_rows(r: &Results) -> Vec<Vec<Cell>> {
    r.flows
        .iter()
        .map(|f| {
            let mut row = vec![Cell::text(&f.name)];
            row.extend(summary_cells(f.latency_ns.as_ref()));
            row.extend([
                Cell::opt_float(f.throughput_bps),
                Cell::int(f.drops),
                Cell::opt_int(f.sent),
                Cell::opt_int(f.retransmits),
                Cell::opt_int(f.packets_received),
                Cell::opt_float(f.packets_per_s),
                Cell::opt_float(f.requests_per_s),
            ]);
            row
        })
        .collect()
}

/// Every latency statistic of a document as (metric, name, summary).
fn latency_series(r: &Results) -> Vec<(&'static str, Option<String>, &Summary)> {
    let mut out = Vec::new();
    if let Some(s) = &r.latency_ns {
        out.push(("latency", None, s));
    }
    for c in &r.cpus {
        out.push(("latency", Some(format!("cpu{}", c.cpu)), &c.latency_ns));
    }
    if let Some(s) = &r.rtt_ns {
        out.push(("rtt", None, s));
    }
    for t in &r.tasks {
        out.push(("response", Some(format!("{}/{}", t.guest, t.name)), &t.response_ns));
    }
    for f in &r.flows {
        if let Some(s) = &f.latency_ns {
            out.push(("flow_latency", Some(f.name.clone()), s));
        }
    }
    out
}

fn latency_rows(r: &Results) -> Vec<Vec<Cell>> {
    latency_series(r)
        .into_iter()
        .map(|(metric, name, summary)| {
            let mut row = vec![Cell::text(metric), Cell::opt_text(name.as_deref())];
            row.extend(summary_cells(Some(summary)));
            row
        })
        .collect()
}

fn histogram_rows(r: &Results) -> Vec<Vec<Cell>> {
    let mut series: Vec<(&str, Option<String>, &[HistogramBucket])> = Vec::new();
    if let Some(h) = &r.histogram_ns {
        series.push(("latency", None, h));
    }
    for c in &r.cpus {
        if let Some(h) = &c.histogram_ns {
            series.push(("latency", Some(format!("cpu{}", c.cpu)), h));
        }
    }
    for f in &r.flows {
        if let Some(h) = &f.histogram_ns {
            series.push(("flow_latency", Some(f.name.clone()), h));
        }
    }
    let mut rows = Vec::new();
    for (metric, name, buckets) in series {
        for b in buckets {
            rows.push(vec![
                Cell::text(metric),
                Cell::opt_text(name.as_deref()),
                Cell::int(b.value_ns),
                Cell::int(b.count),
            ]);
        }
    }
    rows
}

/// One row per point; an interval report line gives one row per CPU.
fn interval_rows(i: &Interval) -> Vec<Vec<Cell>> {
    let times = [Cell::opt_int(i.interval), Cell::opt_int(i.t_ns), Cell::opt_int(i.start_ns), Cell::opt_int(i.end_ns)];
    let row = |cpu: Option<u32>, count: Option<u64>, max: Option<u64>, mean: Option<f64>, missed: Option<u64>| {
        let mut row = times.to_vec();
        row.extend([
            Cell::opt_int(cpu.map(u64::from)),
            Cell::opt_int(count),
            Cell::opt_int(max),
            Cell::opt_float(mean),
            Cell::opt_int(missed),
        ]);
        row
    };
    match &i.cpus {
        Some(cpus) => cpus
            .iter()
            .map(|c| {
                let stalled = i.stalled_cpus.as_ref().map(|s| Cell::Bool(s.contains(&c.cpu))).unwrap_or(Cell::Null);
                let mut r = row(Some(c.cpu), Some(c.count), c.max_ns, c.mean_ns, c.missed_periods);
                r.push(stalled);
                r
            })
            .collect(),
        None => {
            let mean = i.latency_ns.as_ref().map(|l| l.mean);
            let count = i.count.or(i.latency_ns.as_ref().map(|l| l.count));
            let max = i.max_ns.or(i.latency_ns.as_ref().map(|l| l.max));
            let mut r = row(i.cpu, count, max, mean, i.missed_periods);
            r.push(i.stall.map_or(Cell::Null, Cell::Bool));
            vec![r]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::TaskResult;
    use crate::tables::column::Values;

    fn cell_result() -> Results {
        let mut r = Results::new("simulation", 1_000);
        r.seed = Some(7);
        r.rho = Some(0.5);
        r.scenario = Some("s.toml".into());
        r.tasks.push(TaskResult {
            guest: "vm1".into(),
            name: "t1".into(),
            jobs: 10,
            misses: 1,
            dsr: 0.9,
            response_ns: Summary { count: 10, min: 5, max: 90, p50: 40, ..Default::default() },
            ..Default::default()
        });
        r
    }

    #[test]
    fn a_task_row_carries_its_cell_and_statistics() {
        let r = cell_result();
        let t = table(TableName::Tasks, &[&r]);
        assert_eq!(t.rows(), 1);
        assert_eq!(t.columns[0].spec.name, "scenario");
        assert_eq!(t.columns.last().unwrap().spec.name, "error");
        assert_eq!(t.column("seed").unwrap().values, Values::Int(vec![Some(7)]));
        assert_eq!(t.column("response_max_ns").unwrap().values, Values::Int(vec![Some(90)]));
        assert_eq!(t.column("misses").unwrap().values, Values::Int(vec![Some(1)]));
    }

    #[test]
    fn a_failed_cell_is_one_row_with_its_error() {
        let ok = cell_result();
        let mut failed = Results::new("simulation", 0);
        failed.seed = Some(2);
        failed.error = Some("at rho 0.9 the plan is infeasible".into());
        for name in TableName::ALL {
            let t = table(name, &[&ok, &failed]);
            let error = t.column("error").unwrap();
            let Values::Text(errors) = &error.values else { panic!("error is text") };
            assert_eq!(errors.last().unwrap().as_deref(), Some("at rho 0.9 the plan is infeasible"), "{name:?}");
            assert!(t.columns.iter().all(|c| c.values.len() == t.rows()));
        }
    }

    #[test]
    fn table_names_round_trip_and_unknown_ones_are_listed() {
        for name in TableName::ALL {
            assert_eq!(TableName::parse(name.as_str()).unwrap(), name);
        }
        let e = TableName::parse("task").unwrap_err();
        assert!(e.to_string().contains("tasks, guests, cores, flows, latency, histogram, intervals"), "{e}");
    }
}
