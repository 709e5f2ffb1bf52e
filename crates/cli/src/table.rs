//! The one printer of tables for people (`--format table`): latency summaries of `measure timer`
//! and `measure net`, task response times of `measure tasks` and `simulate`, flows of a network
//! simulation, sweep grids, the `vm matrix`, plans, `vm image` and `vm list`. (`rtvirt host`'s
//! tables are the host crate's, also sized to their widest cell.) comfy-table sizes every column to
//! its widest cell, so a guest named `industrial-controller-line-3` widens its own column instead
//! of pushing every column after it out of line. No borders: columns are one space apart, text
//! left-aligned, numbers right-aligned (headers too), trailing blanks trimmed.

use comfy_table::{CellAlignment, Table as Grid};

/// A table being filled: its header fixed, then rows of cells as text.
pub struct Table {
    grid: Grid,
}

impl Table {
    /// Columns named by `header`; the first `text_columns` hold text (left-aligned), the others
    /// numbers (right-aligned).
    pub fn new(header: &[&str], text_columns: usize) -> Table {
        Table::aligned(header, |column| column >= text_columns)
    }

    /// Columns named by `header`, right-aligned where `is_number(column)`.
    pub fn aligned(header: &[&str], is_number: impl Fn(usize) -> bool) -> Table {
        let mut grid = Grid::new();
        grid.load_preset(comfy_table::presets::NOTHING).set_header(header.to_vec());
        for (index, column) in grid.column_iter_mut().enumerate() {
            column.set_padding((0, 1));
            let alignment = if is_number(index) { CellAlignment::Right } else { CellAlignment::Left };
            column.set_cell_alignment(alignment);
        }
        Table { grid }
    }

    /// Add a row: one cell per column (fewer leave the last columns empty).
    pub fn row<C: ToString>(&mut self, cells: impl IntoIterator<Item = C>) -> &mut Table {
        self.grid.add_row(cells.into_iter().map(|c| c.to_string()).collect::<Vec<_>>());
        self
    }

    /// Print the table on stdout.
    pub fn print(&self) {
        println!("{self}");
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.grid.trim_fmt())
    }
}

/// Nanoseconds as microseconds with one decimal, as the latency tables show them.
pub fn micros(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where each column of a line ends (the character after its last non-blank).
    fn column_ends(line: &str) -> Vec<usize> {
        let chars: Vec<char> = line.chars().collect();
        (0..chars.len())
            .filter(|&i| chars[i] != ' ' && chars.get(i + 1).is_none_or(|c| *c == ' '))
            .map(|i| i + 1)
            .collect()
    }

    #[test]
    fn a_long_guest_name_widens_its_column_and_numbers_stay_aligned() {
        let mut table = Table::new(&["guest", "task", "jobs", "p99_us"], 2);
        table.row(["industrial-controller-line-3", "t1", "1000", "12.5"]);
        table.row(["g1", "control-loop", "7", "1234.0"]);
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        // the number columns end at the same place on every line (right-aligned)
        let ends: Vec<Vec<usize>> = lines.iter().map(|l| column_ends(l)).collect();
        let number_ends = |e: &Vec<usize>| e[e.len() - 2..].to_vec();
        assert!(ends.iter().all(|e| number_ends(e) == number_ends(&ends[0])), "{text}");
        // text columns start where the header's do
        let task_column = lines[0].find("task").unwrap();
        assert_eq!(lines[1].find("t1"), Some(task_column), "{text}");
        assert_eq!(lines[2].find("control-loop"), Some(task_column), "{text}");
        assert!(task_column > "industrial-controller-line-3".len(), "{text}");
        assert!(lines.iter().all(|l| !l.ends_with(' ') && !l.starts_with(' ')), "{text}");
    }

    #[test]
    fn short_rows_leave_the_last_columns_empty() {
        let mut table = Table::new(&["flow", "count", "mean_us"], 1);
        table.row(["a", "-"]);
        table.row(["b", "3", "1.0"]);
        let text = table.to_string();
        assert_eq!(text.lines().nth(1), Some("a        -"), "{text}");
    }

    #[test]
    fn micros_show_one_decimal() {
        assert_eq!(micros(12_345.0), "12.3");
        assert_eq!(micros(0.0), "0.0");
    }
}
