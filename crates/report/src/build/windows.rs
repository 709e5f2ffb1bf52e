//! Deadline satisfaction per window (`measure tasks --interval-report`): per result, each guest's
//! DSR in each report window (its tasks' jobs released in the window, and their misses) as a line
//! over time, and a table of each guest's lowest and last window. Placed right after the adapted
//! reservations, so that a `host adapt` decision log's reservation over time and the guests'
//! DSR per window are read together.

use super::limits::{worst_indices, MAX_POINTS_PER_LINE, MAX_SERIES};
use crate::doc::{Cell, Figure, Section, Table};
use crate::input::Input;
use crate::svg::line::{LineChart, Series};
use crate::units::fmt_seconds;
use rtvirt_model::results::{Interval, Results, TaskResult};

/// One guest's windows: (end of the window since the start, jobs, misses), in time order.
struct GuestWindows {
    guest: String,
    windows: Vec<(u64, u64, u64)>,
}

impl GuestWindows {
    /// (time, DSR) of each window with jobs (a window without jobs has no DSR).
    fn points(&self) -> Vec<(f64, f64)> {
        let with_jobs = self.windows.iter().filter(|w| w.1 > 0);
        with_jobs.map(|&(t, jobs, misses)| (t as f64, TaskResult::dsr_of(jobs, misses))).collect()
    }

    fn lowest(&self) -> Option<(f64, f64)> {
        self.points().into_iter().min_by(|a, b| a.1.total_cmp(&b.1))
    }
}

pub fn section(inputs: &[Input]) -> Option<Section> {
    let mut sec = Section::new("Deadline satisfaction per window");
    let mut table = Table::new(
        "Per guest: its tasks' DSR in the lowest window and in the last window with jobs.",
        &["result / guest", "windows", "lowest DSR", "at", "last DSR"],
    );
    for input in inputs {
        let Some(r) = input.results() else { continue };
        let guests = per_guest(r);
        if guests.is_empty() {
            continue;
        }
        sec.figure(figure(&input.name, &guests));
        for g in &guests {
            table.row(row(&input.name, g));
        }
    }
    if sec.blocks.is_empty() {
        return None;
    }
    sec.table(table);
    sec.note(
        "A window counts the jobs released in it and those of them that missed their deadline (a job left \
         unfinished past its deadline at the end is a miss), as the run's totals do: the windows add up to the \
         run. Windows without jobs are not drawn.",
    );
    Some(sec)
}

/// The windows of a result's `intervals` that carry tasks, summed per guest in guest order.
fn per_guest(r: &Results) -> Vec<GuestWindows> {
    let windows: Vec<&Interval> =
        r.intervals.iter().flatten().filter(|i| i.tasks.as_ref().is_some_and(|t| !t.is_empty())).collect();
    let mut guests: Vec<GuestWindows> = Vec::new();
    for w in windows {
        let t = w.end_ns.or(w.t_ns).unwrap_or(0);
        for task in w.tasks.iter().flatten() {
            let at = match guests.iter().position(|g| g.guest == task.guest) {
                Some(at) => at,
                None => {
                    guests.push(GuestWindows { guest: task.guest.clone(), windows: Vec::new() });
                    guests.len() - 1
                }
            };
            let g = &mut guests[at];
            match g.windows.last_mut() {
                Some(last) if last.0 == t => (last.1, last.2) = (last.1 + task.jobs, last.2 + task.misses),
                _ => g.windows.push((t, task.jobs, task.misses)),
            }
        }
    }
    guests
}

fn figure(name: &str, guests: &[GuestWindows]) -> Figure {
    let badness: Vec<f64> = guests.iter().map(|g| 1.0 - g.lowest().map_or(1.0, |l| l.1)).collect();
    let shown = worst_indices(&badness, MAX_SERIES);
    let mut thinned = false;
    let series = shown
        .iter()
        .map(|&i| {
            let points = guests[i].points();
            thinned |= points.len() > MAX_POINTS_PER_LINE;
            let points = lowest_per_bucket(&points, MAX_POINTS_PER_LINE);
            Series {
                name: guests[i].guest.clone(),
                markers: points.len() <= MAX_POINTS_PER_LINE / 5,
                points,
                ..Series::default()
            }
        })
        .collect();
    let chart = LineChart {
        kind: "dsr-windows",
        title: format!("DSR per window: {name}"),
        x_label: "end of window since start".into(),
        y_label: "DSR of the jobs released in the window".into(),
        x_log: false,
        y_log: false,
        x_fmt: fmt_seconds,
        y_fmt: |v| format!("{v:.2}"),
        y_range: Some((0.0, 1.0)),
        series,
    };
    let mut caption = "A dip is a stretch where the guest's reservation fell short of its tasks' demand.".to_string();
    if shown.len() < guests.len() {
        caption.push_str(&format!(
            " The {} guests with the lowest windows of {} are drawn.",
            shown.len(),
            guests.len()
        ));
    }
    if thinned {
        caption.push_str(&format!(
            " Each point is the lowest window in its 1/{MAX_POINTS_PER_LINE} of the run, so no dip is lost."
        ));
    }
    Figure { kind: "dsr-windows", title: chart.title.clone(), caption, svg: chart.render() }
}

/// At most `buckets` points: consecutive runs of points, each kept as its lowest.
fn lowest_per_bucket(points: &[(f64, f64)], buckets: usize) -> Vec<(f64, f64)> {
    if points.len() <= buckets {
        return points.to_vec();
    }
    let size = points.len().div_ceil(buckets);
    points.chunks(size).filter_map(|c| c.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))).collect()
}

fn row(name: &str, g: &GuestWindows) -> Vec<Cell> {
    let points = g.points();
    let (at, lowest) = g.lowest().map_or(("-".into(), "-".into()), |(t, d)| (fmt_seconds(t), format!("{d:.4}")));
    vec![
        Cell::plain(format!("{name} {}", g.guest)),
        Cell::plain(g.windows.len().to_string()),
        Cell::plain(lowest),
        Cell::plain(at),
        Cell::plain(points.last().map_or("-".into(), |p| format!("{:.4}", p.1))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_model::results::TaskWindow;

    fn window(k: u64, tasks: &[(&str, u64, u64)]) -> Interval {
        Interval {
            interval: Some(k),
            start_ns: Some(k * 1_000_000_000),
            end_ns: Some((k + 1) * 1_000_000_000),
            tasks: Some(
                tasks
                    .iter()
                    .enumerate()
                    .map(|(i, &(guest, jobs, misses))| TaskWindow {
                        guest: guest.into(),
                        name: format!("{guest}.t{i}"),
                        jobs,
                        misses,
                    })
                    .collect(),
            ),
            r#type: Some("interval".into()),
            ..Interval::default()
        }
    }

    #[test]
    fn a_guest_s_tasks_are_summed_per_window_and_empty_windows_have_no_point() {
        let mut r = Results::new("tasks", 3_000_000_000);
        r.intervals = Some(vec![
            window(0, &[("a", 10, 0), ("a", 10, 5), ("b", 4, 0)]),
            window(1, &[("a", 0, 0), ("a", 0, 0), ("b", 4, 4)]),
            window(2, &[("a", 10, 1), ("a", 10, 1), ("b", 4, 0)]),
        ]);
        let guests = per_guest(&r);
        assert_eq!(guests.len(), 2);
        assert_eq!(guests[0].windows, [(1_000_000_000, 20, 5), (2_000_000_000, 0, 0), (3_000_000_000, 20, 2)]);
        assert_eq!(guests[0].points(), [(1e9, 0.75), (3e9, 0.9)]);
        assert_eq!(guests[1].lowest(), Some((2e9, 0.0)));
        assert_eq!(
            row("run", &guests[1])[2..].iter().map(|c| c.text.clone()).collect::<Vec<_>>(),
            ["0.0000", "2s", "1.0000"]
        );
        let f = figure("run", &guests);
        assert!(f.svg.contains("data-chart=\"dsr-windows\""), "{}", f.svg);
    }

    #[test]
    fn timer_intervals_and_results_without_windows_get_no_section() {
        let mut r = Results::new("timer", 1);
        r.intervals = Some(vec![Interval { t_ns: Some(1), max_ns: Some(5), ..Interval::default() }]);
        assert!(per_guest(&r).is_empty());
    }

    #[test]
    fn long_runs_keep_the_lowest_window_of_each_bucket() {
        let points: Vec<(f64, f64)> = (0..2_000).map(|i| (i as f64, if i == 1_234 { 0.1 } else { 1.0 })).collect();
        let kept = lowest_per_bucket(&points, 500);
        assert_eq!(kept.len(), 500);
        assert!(kept.contains(&(1_234.0, 0.1)));
    }
}
