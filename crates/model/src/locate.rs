//! Map a field path such as `guest[1].task[0].wcet` back to its line/column in the TOML source,
//! so that errors found after parsing (validation) still point at the right place.

use crate::error::line_col;
use toml_edit::{Document, Item};

/// One step of a field path: a key, optionally indexed (`task[0]`).
fn segments(path: &str) -> Vec<(String, Option<usize>)> {
    path.split('.')
        .filter(|s| !s.is_empty())
        .map(|seg| match seg.find('[') {
            Some(i) => {
                let idx = seg[i + 1..].trim_end_matches(']').parse().ok();
                (seg[..i].to_string(), idx)
            }
            None => (seg.to_string(), None),
        })
        .collect()
}

/// 1-based (line, column) of the deepest part of `path` that exists in `src`.
pub fn locate_field(src: &str, path: &str) -> Option<(usize, usize)> {
    let sanitized;
    let doc = match Document::parse(src) {
        Ok(doc) => doc,
        Err(_) => {
            sanitized = without_huge_integers(src);
            Document::parse(sanitized.as_str()).ok()?
        }
    };
    let mut item: &Item = doc.as_item();
    let mut best = None;
    for (key, index) in segments(path) {
        let table = item.as_table_like()?;
        let Some((k, next)) = table.get_key_value(&key) else { break };
        item = next;
        if let Some(span) = k.span().or_else(|| item.span()) {
            best = Some(span.start);
        }
        if let Some(i) = index {
            item = match item.get(i) {
                Some(next) => next,
                None => break,
            };
            if let Some(span) = item.span().or_else(|| item.as_table().and_then(|t| t.span())) {
                best = Some(span.start);
            }
        }
    }
    best.map(|off| line_col(src, off))
}

/// `src` with every run of 19 or more digits replaced by `0` and spaces (same length, so spans
/// stay where they were): the `toml` reader takes integers beyond i64 (as floats) where
/// `toml_edit` refuses the whole document, which would leave such an error without a line.
fn without_huge_integers(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if digits.len() >= 19 {
            out.push('0');
            out.extend(std::iter::repeat_n(' ', digits.len() - 1));
        } else {
            out.push_str(digits);
        }
        digits.clear();
    };
    for ch in src.chars() {
        if ch.is_ascii_digit() {
            digits.push(ch);
        } else {
            flush(&mut digits, &mut out);
            out.push(ch);
        }
    }
    flush(&mut digits, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_fields() {
        let src = "[host]\ncores = 2\n\n[[guest]]\nname = \"a\"\n\n[[guest]]\nname = \"b\"\n[[guest.task]]\nname = \
                   \"t\"\nwcet = \"1ms\"\n";
        assert_eq!(locate_field(src, "host.cores"), Some((2, 1)));
        assert_eq!(locate_field(src, "guest[1].name"), Some((8, 1)));
        assert_eq!(locate_field(src, "guest[1].task[0].wcet"), Some((11, 1)));
        // missing leaf: falls back to the deepest existing parent
        assert!(locate_field(src, "guest[1].task[0].period").is_some());
        assert_eq!(locate_field("not toml [", "x"), None);
        // an integer beyond i64 (which toml_edit refuses) still gets its line
        assert_eq!(
            locate_field("[host]\ncores = 1\n[[guest]]\nrho = 18446744073709551615\n", "guest[0].rho"),
            Some((4, 1))
        );
    }
}
