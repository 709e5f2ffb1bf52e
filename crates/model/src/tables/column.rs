//! A table as typed columns, built row by row against a fixed list of columns, so that a table's
//! columns and their kinds never depend on the data.

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 64-bit integers (nanoseconds, counts, ids).
    Int,
    Float,
    /// Names with few distinct values (guests, tasks, policies): categories in pandas, dictionary
    /// encoded in Parquet.
    Category,
    /// Free text (errors, core lists).
    Text,
    Bool,
}

/// One column's name, kind and whether it may have missing values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub name: &'static str,
    pub kind: Kind,
    /// False: every row has a value (an `int64` column in pandas rather than a nullable `Int64`).
    pub nullable: bool,
}

impl Spec {
    pub const fn int(name: &'static str) -> Spec {
        Spec { name, kind: Kind::Int, nullable: false }
    }
    pub const fn float(name: &'static str) -> Spec {
        Spec { name, kind: Kind::Float, nullable: true }
    }
    pub const fn category(name: &'static str) -> Spec {
        Spec { name, kind: Kind::Category, nullable: true }
    }
    pub const fn text(name: &'static str) -> Spec {
        Spec { name, kind: Kind::Text, nullable: true }
    }
    pub const fn bool(name: &'static str) -> Spec {
        Spec { name, kind: Kind::Bool, nullable: true }
    }
    /// The same column, allowed to miss values.
    pub const fn nullable(self) -> Spec {
        Spec { nullable: true, ..self }
    }
}

/// One value of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
    Null,
}

impl Cell {
    /// A count or nanoseconds (saturating at `i64::MAX`, far beyond the 30-day horizon).
    pub fn int(value: u64) -> Cell {
        Cell::Int(i64::try_from(value).unwrap_or(i64::MAX))
    }
    pub fn opt_int(value: Option<u64>) -> Cell {
        value.map_or(Cell::Null, Cell::int)
    }
    pub fn opt_float(value: Option<f64>) -> Cell {
        value.map_or(Cell::Null, Cell::Float)
    }
    pub fn text(value: &str) -> Cell {
        Cell::Text(value.to_string())
    }
    pub fn opt_text(value: Option<&str>) -> Cell {
        value.map_or(Cell::Null, Cell::text)
    }
}

/// A column's values, missing ones as `None`.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    /// Category and text columns.
    Text(Vec<Option<String>>),
    Bool(Vec<Option<bool>>),
}

impl Values {
    fn new(kind: Kind) -> Values {
        match kind {
            Kind::Int => Values::Int(Vec::new()),
            Kind::Float => Values::Float(Vec::new()),
            Kind::Category | Kind::Text => Values::Text(Vec::new()),
            Kind::Bool => Values::Bool(Vec::new()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Values::Int(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Text(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append `cell`; a cell of another kind than the column's is a bug of the table's builder.
    fn push(&mut self, cell: Cell, name: &str) {
        match (self, cell) {
            (Values::Int(v), Cell::Int(x)) => v.push(Some(x)),
            (Values::Float(v), Cell::Float(x)) => v.push(Some(x)),
            (Values::Text(v), Cell::Text(x)) => v.push(Some(x)),
            (Values::Bool(v), Cell::Bool(x)) => v.push(Some(x)),
            (Values::Int(v), Cell::Null) => v.push(None),
            (Values::Float(v), Cell::Null) => v.push(None),
            (Values::Text(v), Cell::Null) => v.push(None),
            (Values::Bool(v), Cell::Null) => v.push(None),
            (_, cell) => panic!("table column `{name}`: a {cell:?} does not belong in it"),
        }
    }
}

/// A named column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub spec: Spec,
    pub values: Values,
}

/// Columns of equal length.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<Column>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new(specs: &[Spec]) -> Table {
        Table { columns: specs.iter().map(|&spec| Column { spec, values: Values::new(spec.kind) }).collect() }
    }

    /// Append one row: one cell per column, in column order.
    pub fn push(&mut self, row: Vec<Cell>) {
        assert_eq!(row.len(), self.columns.len(), "a row has one cell per column");
        for (column, cell) in self.columns.iter_mut().zip(row) {
            debug_assert!(column.spec.nullable || cell != Cell::Null, "column `{}` is not nullable", column.spec.name);
            column.values.push(cell, column.spec.name);
        }
    }

    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.values.len())
    }

    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.spec.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_fill_every_column_and_missing_values_stay_missing() {
        let mut t = Table::new(&[Spec::int("jobs"), Spec::category("guest"), Spec::float("dsr")]);
        t.push(vec![Cell::int(3), Cell::text("vm1"), Cell::Null]);
        t.push(vec![Cell::int(u64::MAX), Cell::Null, Cell::Float(0.5)]);
        assert_eq!(t.rows(), 2);
        assert_eq!(t.column("jobs").unwrap().values, Values::Int(vec![Some(3), Some(i64::MAX)]));
        assert_eq!(t.column("guest").unwrap().values, Values::Text(vec![Some("vm1".into()), None]));
        assert_eq!(t.column("dsr").unwrap().values, Values::Float(vec![None, Some(0.5)]));
    }

    #[test]
    #[should_panic(expected = "does not belong")]
    fn a_cell_of_the_wrong_kind_is_a_bug() {
        let mut t = Table::new(&[Spec::int("jobs")]);
        t.push(vec![Cell::text("three")]);
    }
}
