//! Markdown for pasting into issues and docs: every table, every note, and for each chart its
//! title and caption (charts themselves are in the HTML report). Highlighted differences are
//! bold, with a marker saying which way: "**120us (+20%)** ▲" worse, "▼" better, "≠" differs.
//!
//! Every text taken from the document (titles, captions, headers, cells, notes: labels, task
//! and guest names, environment values) goes through [`inline`] or [`paragraph`], so that it
//! reads as the same literal text on every CommonMark / GitHub renderer: no HTML, links, code,
//! emphasis or table cells can come from the data. Written by hand: the escaping is a dozen
//! lines and no Markdown-writing crate escapes for tables and block starts together.

use crate::doc::{Block, Cell, Mark, Report, Table};

pub fn render(report: &Report) -> String {
    let mut out = format!("# {}\n", inline(&report.title));
    for s in &report.sections {
        out.push_str(&format!("\n## {}\n", inline(&s.title)));
        for b in &s.blocks {
            match b {
                Block::Figure(f) => out.push_str(&format!(
                    "\n*Chart (in the HTML report): {}.* {}\n",
                    inline(&f.title),
                    inline(&f.caption)
                )),
                Block::Table(t) => out.push_str(&table(t)),
                Block::Lead(text) => out.push_str(&format!("\n**{}**\n", inline(text))),
                Block::Note(n) => out.push_str(&format!("\n{}\n", paragraph(n))),
            }
        }
    }
    out
}

fn table(table: &Table) -> String {
    let mut out = String::from("\n");
    if !table.caption.is_empty() {
        out.push_str(&format!("**{}**\n\n", inline(&table.caption)));
    }
    out.push_str(&format!("| {} |\n", table.header.iter().map(|h| inline(h)).collect::<Vec<_>>().join(" | ")));
    out.push_str(&format!(
        "|{}|\n",
        (0..table.header.len())
            .map(|i| if table.numeric_column(i) { "---:" } else { "---" })
            .collect::<Vec<_>>()
            .join("|")
    ));
    for row in &table.rows {
        out.push_str(&format!("| {} |\n", row.iter().map(cell).collect::<Vec<_>>().join(" | ")));
    }
    out
}

fn cell(cell: &Cell) -> String {
    let text = inline(&cell.text);
    match cell.mark {
        Mark::None => text,
        Mark::Worse => format!("**{text}** ▲"),
        Mark::Better => format!("**{text}** ▼"),
        Mark::Differs => format!("**{text}** ≠"),
    }
}

/// Characters with a meaning inside a Markdown line (emphasis, code, links, images, raw HTML,
/// entities, table cells, strikethrough, headings): each is written with a backslash, which
/// CommonMark allows before any ASCII punctuation.
const INLINE_SPECIAL: &[char] = &['\\', '`', '*', '_', '[', ']', '<', '>', '&', '|', '~', '#', '!'];

/// Text inside one line: special characters escaped, line breaks and other control characters
/// as spaces (a newline would end a table row or heading).
pub fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if INLINE_SPECIAL.contains(&c) {
            out.push('\\');
            out.push(c);
        } else if c.is_control() {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// A paragraph of its own: [`inline`], and what would open a block at its start (indentation
/// as code, "-", "+", "=" as lists or headings underlines, "1." or "1)" as ordered lists) escaped.
pub fn paragraph(text: &str) -> String {
    let text = inline(text.trim_start());
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    let after_digits = text[digits..].chars().next();
    if text.starts_with(['-', '+', '=']) {
        format!("\\{text}")
    } else if digits > 0 && matches!(after_digits, Some('.' | ')')) {
        format!("{}\\{}", &text[..digits], &text[digits..])
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_escapes_every_special_character_and_flattens_lines() {
        assert_eq!(inline("<script>a|b</script>"), "\\<script\\>a\\|b\\</script\\>");
        assert_eq!(
            inline("**x** _y_ `z` [l](u) ![i](u) ~~s~~ &amp; #"),
            "\\*\\*x\\*\\* \\_y\\_ \\`z\\` \\[l\\](u) \\!\\[i\\](u) \\~\\~s\\~\\~ \\&amp; \\#"
        );
        assert_eq!(inline("a\nb\r\tc\\"), "a b  c\\\\");
    }

    #[test]
    fn paragraphs_cannot_open_blocks() {
        assert_eq!(paragraph("- item"), "\\- item");
        assert_eq!(paragraph("    code"), "code");
        assert_eq!(paragraph("12. list"), "12\\. list");
        assert_eq!(paragraph("3) list"), "3\\) list");
        assert_eq!(paragraph("12.5us is fine"), "12\\.5us is fine");
        assert_eq!(paragraph("vm1: fine"), "vm1: fine");
    }
}
