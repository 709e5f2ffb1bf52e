//! Markdown for pasting into issues and docs: every table, every note, and for each chart its
//! title and caption (charts themselves are in the HTML report). Highlighted differences are
//! bold, with a marker saying which way: "**120us (+20%)** ▲" worse, "▼" better, "≠" differs.

use crate::doc::{Block, Cell, Mark, Report, Table};

pub fn render(report: &Report) -> String {
    let mut out = format!("# {}\n", report.title);
    for s in &report.sections {
        out.push_str(&format!("\n## {}\n", s.title));
        for b in &s.blocks {
            match b {
                Block::Figure(f) => {
                    out.push_str(&format!("\n*Chart (in the HTML report): {}.* {}\n", f.title, f.caption))
                }
                Block::Table(t) => out.push_str(&table(t)),
                Block::Note(n) => out.push_str(&format!("\n{n}\n")),
            }
        }
    }
    out
}

fn table(t: &Table) -> String {
    let mut out = String::from("\n");
    if !t.caption.is_empty() {
        out.push_str(&format!("**{}**\n\n", escape(&t.caption)));
    }
    out.push_str(&format!("| {} |\n", t.header.iter().map(|h| escape(h)).collect::<Vec<_>>().join(" | ")));
    out.push_str(&format!(
        "|{}|\n",
        (0..t.header.len()).map(|i| if t.numeric_column(i) { "---:" } else { "---" }).collect::<Vec<_>>().join("|")
    ));
    for row in &t.rows {
        out.push_str(&format!("| {} |\n", row.iter().map(cell).collect::<Vec<_>>().join(" | ")));
    }
    out
}

fn cell(c: &Cell) -> String {
    let text = escape(&c.text);
    match c.mark {
        Mark::None => text,
        Mark::Worse => format!("**{text}** ▲"),
        Mark::Better => format!("**{text}** ▼"),
        Mark::Differs => format!("**{text}** ≠"),
    }
}

/// Keep cell text from breaking the table: escape pipes, flatten newlines.
fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
