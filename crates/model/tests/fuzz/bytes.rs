//! Raw mutation: the corpus file's bytes changed without regard to their syntax (what a lexer and
//! the bounded reader see: broken tokens, invalid UTF-8, truncation, long repetitions).

use super::tape::{hostile_duration, hostile_number, Tape};

/// Largest input a raw mutation makes.
const MAX_LEN: usize = 1 << 20;

/// Tokens inserted at random places: syntax characters of TOML, JSON, XML and CSV.
const TOKENS: &[&str] = &[
    "\n",
    "\r\n",
    "\"",
    "'",
    "\"\"\"",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    "=",
    ",",
    ":",
    ".",
    "#",
    "\\",
    "<",
    ">",
    "/>",
    "</",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "&",
    "&#10;",
    "&#0;",
    "&amp;",
    "&unknown;",
    "\u{0}",
    "\u{feff}",
    "\u{ff}",
    "null",
    "true",
    "false",
    "=\n",
    "a.b.c.d",
    "[a.b]",
    "{\"schema\":",
    "<?xml version=\"1.0\"?>",
];

/// `input` changed by 1 to 8 mutations read from the tape (`other`: another corpus file, for
/// splices).
pub fn mutate(input: &[u8], other: &[u8], tape: &mut Tape) -> Vec<u8> {
    let mut out = input.to_vec();
    let rounds = 1 + tape.below(8);
    for _ in 0..rounds {
        mutate_once(&mut out, other, tape);
        out.truncate(MAX_LEN);
    }
    out
}

fn mutate_once(out: &mut Vec<u8>, other: &[u8], tape: &mut Tape) {
    let len = out.len();
    let at = tape.below(len + 1);
    match tape.below(11) {
        0 if len > 0 => out[at.min(len - 1)] ^= 1 << tape.below(8),
        1 if len > 0 => {
            out[at.min(len - 1)] = *tape.pick(&[0u8, 0xff, 0x80, b'\n', b'"', b'[', b'{', b'<', b'=', b'\\'])
        }
        2 => insert(out, at, tape.pick(TOKENS).as_bytes()),
        3 => insert(out, at, hostile_number(tape).as_bytes()),
        4 => insert(out, at, hostile_duration(tape).as_bytes()),
        5 => {
            let end = (at + 1 + tape.below(64)).min(len);
            out.drain(at..end);
        }
        6 => out.truncate(at),
        7 => {
            // duplicate a range in place
            let end = (at + 1 + tape.below(256)).min(len);
            let piece = out[at..end].to_vec();
            insert(out, end, &piece);
        }
        8 => {
            // repeat a short range many times (long keys, deep nesting, huge arrays)
            let end = (at + 1 + tape.below(8)).min(len);
            let times = *tape.pick(&[2usize, 10, 100, 1_000, 10_000, 100_000]);
            let piece = out[at..end].repeat(times.min(MAX_LEN / (end - at).max(1)));
            insert(out, end, &piece);
        }
        9 if !other.is_empty() => {
            // splice part of another corpus file in
            let from = tape.below(other.len());
            let end = (from + 1 + tape.below(512)).min(other.len());
            insert(out, at, &other[from..end]);
        }
        _ => {
            // swap two lines' worth of bytes
            let b = tape.below(len + 1);
            let (lo, hi) = (at.min(b), at.max(b));
            out[lo..hi].reverse();
        }
    }
}

fn insert(out: &mut Vec<u8>, at: usize, piece: &[u8]) {
    let at = at.min(out.len());
    out.splice(at..at, piece.iter().copied());
}
