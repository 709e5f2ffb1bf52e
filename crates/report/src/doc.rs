//! The report as a format-independent document: sections of figures (pre-rendered SVG), tables
//! and notes. `render::html` and `render::markdown` turn it into files.

/// How a table cell is highlighted when compared with its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mark {
    #[default]
    None,
    /// Worse than the baseline by more than the threshold.
    Worse,
    /// Better than the baseline by more than the threshold.
    Better,
    /// Differs from the other columns (environment rows, non-numeric values).
    Differs,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cell {
    pub text: String,
    pub mark: Mark,
}

impl Cell {
    pub fn plain(text: impl Into<String>) -> Cell {
        Cell { text: text.into(), mark: Mark::None }
    }
    pub fn marked(text: impl Into<String>, mark: Mark) -> Cell {
        Cell { text: text.into(), mark }
    }
    /// Numbers (with units or a difference) are right-aligned; text and "-" are not.
    pub fn is_numeric(&self) -> bool {
        let t = &self.text;
        t.chars().next().is_some_and(|c| c.is_ascii_digit()) || (t.len() > 1 && t.starts_with(['-', '+']))
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::plain(text)
    }
}
impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::plain(text)
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(caption: impl Into<String>, header: &[&str]) -> Table {
        Table { caption: caption.into(), header: header.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }
    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }
    /// Whether column `i` holds numbers (most of its non-empty cells are numeric).
    pub fn numeric_column(&self, i: usize) -> bool {
        let cells: Vec<&Cell> =
            self.rows.iter().filter_map(|r| r.get(i)).filter(|c| !c.text.is_empty() && c.text != "-").collect();
        !cells.is_empty() && cells.iter().filter(|c| c.is_numeric()).count() * 2 > cells.len()
    }
}

/// A chart: SVG markup (self-contained) plus what Markdown shows instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Chart kind ("cdf", "histogram", "boxplot", "dsr-rho", "bandwidth", "segments", "timeseries", ...).
    pub kind: &'static str,
    pub title: String,
    pub caption: String,
    pub svg: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A sentence that leads the report (the verdict), shown prominently.
    Lead(String),
    Figure(Figure),
    Table(Table),
    Note(String),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Section {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Section {
    pub fn new(title: impl Into<String>) -> Section {
        Section { title: title.into(), blocks: Vec::new() }
    }
    pub fn figure(&mut self, figure: Figure) {
        self.blocks.push(Block::Figure(figure));
    }
    pub fn table(&mut self, table: Table) {
        if !table.rows.is_empty() {
            self.blocks.push(Block::Table(table));
        }
    }
    pub fn note(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Note(text.into()));
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    pub title: String,
    pub sections: Vec<Section>,
}

impl Report {
    /// Every figure of the report, in order.
    pub fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.sections.iter().flat_map(|s| s.blocks.iter()).filter_map(|b| match b {
            Block::Figure(f) => Some(f),
            _ => None,
        })
    }
    /// Every table of the report, in order.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.sections.iter().flat_map(|s| s.blocks.iter()).filter_map(|b| match b {
            Block::Table(t) => Some(t),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_columns_are_told_from_text() {
        let mut t = Table::new("", &["name", "p99"]);
        t.row(vec![Cell::plain("vm1"), Cell::plain("12.3us (+4%)")]);
        t.row(vec![Cell::plain("-"), Cell::plain("-")]);
        t.row(vec![Cell::plain("-5 is text?"), Cell::plain("-0.5 pp")]);
        assert!(!t.numeric_column(0) && t.numeric_column(1));
        assert!(!Cell::plain("-").is_numeric());
    }
}
