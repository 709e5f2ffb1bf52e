//! Structure-aware mutation of line-oriented files (execution-time samples, CSV): lines replaced
//! by durations at their edges, NaN, headers, comments, extra columns; lines repeated, removed or
//! reordered; CRLF, a byte-order mark, a missing final newline.

use super::tape::{hostile_duration, hostile_number, hostile_string, Tape};

pub fn mutate(text: &str, tape: &mut Tape) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let rounds = 1 + tape.below(4);
    for _ in 0..rounds {
        let i = tape.below(lines.len());
        match tape.below(8) {
            0 | 1 => lines[i] = cell(tape),
            2 => lines[i] = format!("{},{}", cell(tape), cell(tape)),
            3 => {
                lines.remove(i);
                if lines.is_empty() {
                    lines.push(String::new());
                }
            }
            4 => {
                let times = *tape.pick(&[1usize, 2, 10, 100, 10_000]);
                let copy = lines[i].clone();
                lines.splice(i..i, std::iter::repeat_n(copy, times));
            }
            5 => lines.insert(i, (*tape.pick(&["# comment", "", "   ", "value", "time_ns,cpu", "exec,ms"])).into()),
            6 => {
                // keep only a few lines (a file of headers, comments, one value...)
                let keep = 1 + tape.below(3);
                lines.truncate(keep);
            }
            _ => lines[i] = format!("{}{}", lines[i], hostile_string(tape).chars().take(200).collect::<String>()),
        }
    }
    let newline = if tape.below(8) == 0 { "\r\n" } else { "\n" };
    let mut out = lines.join(newline);
    if tape.below(4) != 0 {
        out.push_str(newline);
    }
    if tape.below(16) == 0 {
        out.insert(0, '\u{feff}');
    }
    out
}

fn cell(tape: &mut Tape) -> String {
    match tape.below(4) {
        0 => hostile_number(tape),
        1 => format!("{}{}", hostile_number(tape), tape.pick(&["ns", "us", "ms", "s", "h", ""])),
        2 => hostile_string(tape).chars().take(200).collect(),
        _ => hostile_duration(tape),
    }
}
