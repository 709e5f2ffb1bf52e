//! `rtvirt export`: results files -> one table as CSV or Parquet, for users without Python. The
//! tables are `rtvirt_model::tables` (the same the Python package turns into DataFrames); CSV is
//! written with the `csv` crate, Parquet with the `parquet` crate's Arrow writer (names
//! dictionary-encoded, so pandas reads them back as categories).

use crate::cli_common::{CmdResult, Outcome};
use anyhow::Context;
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use clap::{Args, ValueEnum};
use rtvirt_model::tables::column::{Column, Kind, Table, Values};
use rtvirt_model::tables::read::results_documents_known;
use rtvirt_model::tables::results::{table, TableName};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Comma-separated values with a header line; a missing value is an empty field.
    Csv,
    /// Apache Parquet (typed columns: int64, double, dictionary-encoded names, strings, booleans).
    Parquet,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TableArg {
    /// One row per periodic task: jobs, misses, DSR, response-time statistics.
    Tasks,
    /// One row per guest (vCPU thread): CPU time, utilisation, cores, policy, reservation.
    Guests,
    /// One row per core: utilisation, CPU time.
    Cores,
    /// One row per network flow: latency statistics, throughput, drops.
    Flows,
    /// One row per latency statistic (timer, per CPU, round trip, responses, flows).
    Latency,
    /// One row per bucket of every exact histogram.
    Histogram,
    /// One row per interval report (per CPU for interval report lines).
    Intervals,
}

impl TableArg {
    fn name(self) -> TableName {
        match self {
            TableArg::Tasks => TableName::Tasks,
            TableArg::Guests => TableName::Guests,
            TableArg::Cores => TableName::Cores,
            TableArg::Flows => TableName::Flows,
            TableArg::Latency => TableName::Latency,
            TableArg::Histogram => TableName::Histogram,
            TableArg::Intervals => TableName::Intervals,
        }
    }
}

#[derive(Args)]
#[command(after_help = "Every table starts with the document's scenario, rho and seed (a sweep cell) and ends with \
its error (a cell that could not run is one row with its error). Times are integer nanoseconds in columns ending \
in _ns. The Python package gives the same tables as DataFrames (Results.tasks(), ...).\n\n\
Examples:\n  rtvirt simulate --sweep experiments/seeds5_dsr_vs_rho.sweep.toml --format json > sweep.json\n  \
rtvirt export sweep.json --to csv --table tasks > tasks.csv\n  \
rtvirt export a.json b.json --to parquet --table latency -o latency.parquet")]
pub struct ExportArgs {
    /// Results files (rtvirt.results/v1): one document, a JSON array of them (`simulate --sweep`,
    /// `vm matrix`) or interval report lines and their document; rows follow the files' order.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum)]
    pub to: ExportFormat,
    /// Which table.
    #[arg(long, value_enum, default_value_t = TableArg::Tasks)]
    pub table: TableArg,
    /// Where to write ("-": standard output, the default for CSV; Parquet needs a file).
    #[arg(short, long, value_name = "PATH", default_value = "-")]
    pub output: PathBuf,
}

pub fn run(args: ExportArgs) -> CmdResult {
    let inputs: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
    crate::output_file::check("--output", &args.output, &inputs)?;
    let to_stdout = args.output == Path::new("-");
    if to_stdout && args.to == ExportFormat::Parquet {
        return Err(rtvirt_model::InputError::field(
            "--output",
            "Parquet is binary: expected a file (-o FILE.parquet)",
        )
        .into());
    }
    let mut documents = Vec::new();
    for path in &args.files {
        documents.extend(results_documents_known(path)?);
    }
    let refs: Vec<_> = documents.iter().collect();
    let table = table(args.table.name(), &refs);
    match args.to {
        ExportFormat::Csv if to_stdout => write_csv(&table, std::io::stdout().lock())?,
        ExportFormat::Csv => write_csv(&table, create(&args.output)?)?,
        ExportFormat::Parquet => write_parquet(&table, create(&args.output)?)?,
    }
    if !to_stdout {
        eprintln!("{} rows of table {} written to {}", table.rows(), args.table.name().as_str(), args.output.display());
    }
    Ok(Outcome::Ok)
}

fn create(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))
}

/// CSV: a header of column names, then one line per row; missing values are empty fields. A
/// text that a spreadsheet would run as a formula is neutralised (see [`neutralised`]).
fn write_csv(table: &Table, out: impl Write) -> anyhow::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(table.columns.iter().map(|c| c.spec.name))?;
    for row in 0..table.rows() {
        writer.write_record(table.columns.iter().map(|c| csv_field(c, row)))?;
    }
    writer.flush()?;
    Ok(())
}

fn csv_field(column: &Column, row: usize) -> String {
    match &column.values {
        Values::Int(v) => v[row].map(|x| x.to_string()),
        Values::Float(v) => v[row].map(|x| x.to_string()),
        Values::Text(v) => v[row].as_deref().map(neutralised),
        Values::Bool(v) => v[row].map(|x| x.to_string()),
    }
    .unwrap_or_default()
}

/// A text cell as a spreadsheet shows it rather than runs it (OWASP, "CSV Injection"): one
/// starting with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`. Only text
/// columns (names, labels, errors) are touched; numbers in numeric columns stay numbers.
fn neutralised(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    }
}

/// Parquet through one Arrow record batch.
fn write_parquet(table: &Table, out: std::fs::File) -> anyhow::Result<()> {
    let fields: Vec<Field> =
        table.columns.iter().map(|c| Field::new(c.spec.name, data_type(c.spec.kind), c.spec.nullable)).collect();
    let schema = Arc::new(Schema::new(fields));
    let arrays: Vec<ArrayRef> = table.columns.iter().map(array).collect();
    let batch = RecordBatch::try_new(schema.clone(), arrays)?;
    let mut writer = parquet::arrow::ArrowWriter::try_new(out, schema, None)?;
    writer.write(&batch)?;
    writer.close()?;
    Ok(())
}

fn data_type(kind: Kind) -> DataType {
    match kind {
        Kind::Int => DataType::Int64,
        Kind::Float => DataType::Float64,
        Kind::Category => DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        Kind::Text => DataType::Utf8,
        Kind::Bool => DataType::Boolean,
    }
}

fn array(column: &Column) -> ArrayRef {
    match (&column.values, column.spec.kind) {
        (Values::Int(v), _) => Arc::new(Int64Array::from(v.clone())),
        (Values::Float(v), _) => Arc::new(Float64Array::from(v.clone())),
        (Values::Text(v), Kind::Category) => {
            Arc::new(v.iter().map(Option::as_deref).collect::<DictionaryArray<Int32Type>>())
        }
        (Values::Text(v), _) => Arc::new(StringArray::from(v.iter().map(Option::as_deref).collect::<Vec<_>>())),
        (Values::Bool(v), _) => Arc::new(BooleanArray::from(v.clone())),
    }
}
