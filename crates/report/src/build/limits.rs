//! How much of a large input a report draws: charts have a fixed size, so a chart shows at most
//! a few dozen categories or series and a line at most one point per pixel column; tables list
//! every task and result, but per-CPU rows are limited to the worst CPUs. Whatever is left out
//! is said in the chart's caption or a note, with the count, and the worst values are always
//! among what is shown. Time and memory then grow with the input only while reading it.

/// Categories of a bar chart (tasks in "DSR per task"): the lowest DSRs are shown.
pub const MAX_CATEGORIES: usize = 40;
/// Series of a line chart, histogram or box plot: the baseline and the worst tails are shown.
pub const MAX_SERIES: usize = 12;
/// Results side by side in a group of a per-task chart (bars or boxes per task): the baseline
/// and those with the most deadline misses are shown.
pub const MAX_GROUPED_SERIES: usize = 6;
/// Points of one line: the plot area is ~500 px wide, so each of these buckets keeps its maximum.
pub const MAX_POINTS_PER_LINE: usize = 500;
/// Per-CPU rows of one result in the per-CPU table: the CPUs with the highest maximum.
pub const MAX_CPU_ROWS: usize = 32;
/// Stalled intervals listed by time in a note; the rest are counted.
pub const MAX_STALLS_LISTED: usize = 20;

/// Indices of the `keep` items with the largest `badness`, in their original order.
pub fn worst_indices(badness: &[f64], keep: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..badness.len()).collect();
    if order.len() > keep {
        order.select_nth_unstable_by(keep, |&a, &b| badness[b].total_cmp(&badness[a]));
        order.truncate(keep);
    }
    order.sort_unstable();
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_are_kept_in_order() {
        assert_eq!(worst_indices(&[1.0, 9.0, 3.0, 7.0, 2.0], 2), vec![1, 3]);
        assert_eq!(worst_indices(&[1.0, 2.0], 5), vec![0, 1]);
    }
}
