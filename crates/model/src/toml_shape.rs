//! Limits on the shapes of a TOML document that cost the `toml` reader much more memory than their
//! size. The reader builds a tree of the whole document before it is deserialized: about 50 bytes
//! of memory per input byte for a scenario of guests and tasks, but up to ~290 for a file of small
//! nested inline tables (`docs/PERFORMANCE.md`, "TOML inputs"). [`check`] walks the document with
//! `toml_parser`'s lexer (streaming: no tree, constant memory) before it is parsed and refuses:
//!
//! - arrays, inline tables and dotted keys nested more than [`MAX_DEPTH`] deep;
//! - more arrays and inline tables than one per [`BYTES_PER_CONTAINER`] bytes of the file (after
//!   the first [`FREE_CONTAINERS`]): a task written as an inline table takes ~40 bytes;
//! - keys longer than [`MAX_KEY_LEN`] bytes.
//!
//! Each error names the line, column and the enclosing keys. The lexer is the `toml` crate's own
//! (no TOML is parsed by hand here); only the counting is written here, as no library bounds these.

use crate::error::{line_col, InputError};
use toml_parser::lexer::TokenKind;

/// Most arrays, inline tables and dotted-key parts open at once (a scenario needs 3: a guest's
/// `task = [{ exec = { ... } }]`).
pub const MAX_DEPTH: usize = 8;
/// Fewest input bytes per array or inline table, on average over the file.
pub const BYTES_PER_CONTAINER: usize = 16;
/// Arrays and inline tables any file may hold whatever its size.
pub const FREE_CONTAINERS: usize = 4096;
/// Longest key, in bytes.
pub const MAX_KEY_LEN: usize = 128;

/// Refuse the shapes of `src` that would cost the TOML reader far more than its size (see the
/// module doc). Text the lexer cannot read is left to the parser, which says what is wrong.
pub fn check(src: &str) -> Result<(), InputError> {
    let mut walk = Walk::new(src);
    let source = toml_parser::Source::new(src);
    let mut tokens = source.lex().peekable();
    while let Some(token) = tokens.next() {
        let next = loop {
            match tokens.peek() {
                Some(t) if t.kind() == TokenKind::Whitespace => {
                    tokens.next();
                }
                t => break t.map(|t| t.kind()),
            }
        };
        let span = token.span();
        walk.token(token.kind(), span.start(), &src[span.start()..span.end()], next)?;
    }
    Ok(())
}

/// The lexer's tokens, counted.
struct Walk<'s> {
    src: &'s str,
    /// Open arrays and inline tables, each with the key it is the value of (or "").
    open: Vec<&'s str>,
    /// Key parts since the last `=`, `,`, `{`, `[` or newline (a dotted key or a header).
    key: Vec<&'s str>,
    /// The last `[table]` or `[[array of tables]]` header, as its keys.
    header: Vec<&'s str>,
    in_header: bool,
    containers: usize,
    allowed: usize,
}

impl<'s> Walk<'s> {
    fn new(src: &'s str) -> Walk<'s> {
        let allowed = FREE_CONTAINERS + src.len() / BYTES_PER_CONTAINER;
        Walk { src, open: Vec::new(), key: Vec::new(), header: Vec::new(), in_header: false, containers: 0, allowed }
    }

    fn token(&mut self, kind: TokenKind, at: usize, text: &'s str, next: Option<TokenKind>) -> Result<(), InputError> {
        match kind {
            TokenKind::LeftSquareBracket if self.open.is_empty() && self.at_line_start(at) => {
                self.in_header = true;
                self.key.clear();
            }
            TokenKind::LeftSquareBracket if self.in_header => {}
            TokenKind::RightSquareBracket if self.in_header && next == Some(TokenKind::RightSquareBracket) => {}
            TokenKind::RightSquareBracket if self.in_header => {
                self.in_header = false;
                self.header = std::mem::take(&mut self.key);
            }
            TokenKind::LeftSquareBracket | TokenKind::LeftCurlyBracket => {
                let key = self.key.last().copied().unwrap_or("");
                self.open.push(key);
                self.key.clear();
                self.containers += 1;
                self.check_depth(at)?;
                if self.containers > self.allowed {
                    return Err(self.error(at, self.too_many()));
                }
            }
            TokenKind::RightSquareBracket | TokenKind::RightCurlyBracket => {
                self.open.pop();
                self.key.clear();
            }
            TokenKind::Newline | TokenKind::Comma => self.key.clear(),
            TokenKind::Atom | TokenKind::BasicString | TokenKind::LiteralString
                if self.in_header || matches!(next, Some(TokenKind::Equals | TokenKind::Dot)) =>
            {
                self.key.push(text);
                if text.len() > MAX_KEY_LEN {
                    let msg = format!("a key of {} bytes: expected a name of at most {MAX_KEY_LEN} bytes", text.len());
                    return Err(self.error(at, msg));
                }
                self.check_depth(at)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn check_depth(&self, at: usize) -> Result<(), InputError> {
        let depth = self.open.len() + self.key.len().saturating_sub(1);
        if depth > MAX_DEPTH {
            let msg = format!(
                "arrays, inline tables and dotted keys nested {depth} deep: expected at most {MAX_DEPTH} levels"
            );
            return Err(self.error(at, msg));
        }
        Ok(())
    }

    fn too_many(&self) -> String {
        format!(
            "more than {} arrays and inline tables in {} bytes: expected at most {FREE_CONTAINERS} plus one per \
             {BYTES_PER_CONTAINER} bytes of the file (write long lists as [[tables]] or in JSON)",
            self.allowed,
            self.src.len()
        )
    }

    fn at_line_start(&self, at: usize) -> bool {
        self.src[..at].rsplit('\n').next().is_some_and(|l| l.trim().is_empty())
    }

    /// An error at byte `at`, naming the header's and the enclosing keys.
    fn error(&self, at: usize, message: String) -> InputError {
        let keys: Vec<&str> = self
            .header
            .iter()
            .chain(self.open.iter())
            .chain(self.key.iter())
            .copied()
            .filter(|k| !k.is_empty())
            .collect();
        let (line, col) = line_col(self.src, at);
        let e = if keys.is_empty() { InputError::new(message) } else { InputError::field(keys.join("."), message) };
        e.at_line(line, col)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(src: &str) -> InputError {
        check(src).expect_err(src)
    }

    #[test]
    fn accepts_scenarios_and_refuses_deep_nesting_with_its_place() {
        let ok = "[host]\ncores = 2\n[[guest]]\nname = \"a.b\"\ntask = [{name = \"t\", exec = { dist = \"x\", v = \
                  [1.5, 2.5] }}]\n[guest.vcpu]\na.b.c = 1\n";
        check(ok).unwrap();
        let deep = format!("[host]\ncores = 1\nz = [{}1{}]\n", "{a=".repeat(8), "}".repeat(8));
        let e = err(&deep);
        assert_eq!(e.at.line_col, Some((3, 27)), "{e}");
        assert_eq!(e.at.field.as_deref(), Some("host.z.a.a.a.a.a.a.a"), "{e}");
        assert!(e.message.contains("nested 9 deep: expected at most 8 levels"), "{e}");
        let dotted = format!("{} = 1\n", (0..10).map(|i| format!("k{i}")).collect::<Vec<_>>().join("."));
        assert_eq!(err(&dotted).at.line_col, Some((1, 28)));
        let header = format!("[{}]\n", (0..10).map(|i| format!("k{i}")).collect::<Vec<_>>().join("."));
        assert!(err(&header).message.contains("nested 9 deep"));
        // brackets inside strings are not nesting
        check(&format!("s = \"{}\"\n", "[{".repeat(100))).unwrap();
    }

    #[test]
    fn refuses_long_keys_and_dense_containers() {
        let key = format!("[host]\n{} = 1\n", "k".repeat(MAX_KEY_LEN + 1));
        let e = err(&key);
        assert_eq!((e.at.line_col, e.at.field.as_deref()), (Some((2, 1)), Some(&*format!("host.{}", "k".repeat(129)))));
        assert!(e.message.starts_with("a key of 129 bytes: expected a name of at most 128 bytes"), "{e}");
        check(&format!("{} = 1\n", "k".repeat(MAX_KEY_LEN))).unwrap();
        let n = 20_000;
        let dense = format!("z = [{}]\n", vec!["{}"; n].join(","));
        let e = err(&dense);
        let allowed = FREE_CONTAINERS + dense.len() / BYTES_PER_CONTAINER;
        assert_eq!(e.at.line_col, Some((1, 6 + 3 * (allowed - 1))), "{e}");
        assert_eq!(e.at.field.as_deref(), Some("z"));
        let roomy = format!("z = [{}]\n", vec!["{a = \"twelve bytes\"}"; n].join(","));
        check(&roomy).unwrap();
    }
}
