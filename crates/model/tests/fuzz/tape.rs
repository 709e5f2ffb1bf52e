//! The tape of random words a case is made from: every choice a mutator makes reads one word, so
//! that proptest shrinks a failing case by shortening the tape and lowering its words (an empty
//! tape reads zeros: the first, smallest choice everywhere).

pub struct Tape<'a> {
    words: &'a [u32],
    at: usize,
}

impl<'a> Tape<'a> {
    pub fn new(words: &'a [u32]) -> Tape<'a> {
        Tape { words, at: 0 }
    }

    /// The next word (0 when the tape is used up).
    pub fn word(&mut self) -> u32 {
        let w = self.words.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        w
    }

    /// A choice in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.word() as usize % n.max(1)
    }

    /// One of `items`.
    pub fn pick<'b, T>(&mut self, items: &'b [T]) -> &'b T {
        &items[self.below(items.len())]
    }

    /// Whether the tape has words left.
    pub fn more(&self) -> bool {
        self.at < self.words.len()
    }
}

/// Hostile and boundary strings every mutator draws from: empty, huge, unicode, control
/// characters, markup and shell metacharacters.
pub fn hostile_string(tape: &mut Tape) -> String {
    match tape.below(12) {
        0 => String::new(),
        1 => "x".repeat(100_000),
        2 => "ü雪🦀\u{202e}\u{feff}".into(),
        3 => "\u{0}\u{1}\u{1b}[31m\u{7f}".into(),
        4 => "a\nb\r\n\tc".into(),
        5 => "$(touch /tmp/x);`id`|&".into(),
        6 => "<script>\"'&amp;]]>".into(),
        7 => "\\u0000\\\\".into(),
        8 => " ".into(),
        9 => "-".into(),
        10 => "🦀".repeat(10_000),
        _ => "a".repeat(1 + tape.below(300)),
    }
}

/// Boundary durations and duration-like text (valid and invalid units, signs, overflow).
pub fn hostile_duration(tape: &mut Tape) -> String {
    (*tape.pick(&[
        "0ns",
        "1ns",
        "1",
        "0",
        "18446744073709551615ns",
        "18446744073709551616ns",
        "18446744073709551615s",
        "1e3ms",
        "1.5h",
        "3600s",
        "3601s",
        "720h",
        "721h",
        "-5ms",
        "5 ms",
        "5xs",
        "NaNms",
        "infs",
        "0.0000000001ns",
        "1.25ms",
        "10us",
        "10µs",
        "1e-9s",
        "ms",
        "",
        "99999999999999999999999999ms",
        ".5ms",
        "5.ms",
        "1_000us",
        "１ms",
    ]))
    .to_string()
}

/// Boundary numbers as text (integers beyond i64/u64, floats beyond f64, NaN, signs).
pub fn hostile_number(tape: &mut Tape) -> String {
    (*tape.pick(&[
        "0",
        "1",
        "-1",
        "2",
        "4096",
        "4097",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "1e308",
        "1e309",
        "-1e309",
        "5e-324",
        "0.0",
        "-0.0",
        "0.5",
        "1.0",
        "0.999999999999",
        "1.0000000001",
        "nan",
        "inf",
        "-inf",
        "NaN",
        "Infinity",
        "0x10",
        "1_000",
        "00",
    ]))
    .to_string()
}
