//! The command line of a study cell's runs: `rtvirt measure ...` with the cell's place, loads,
//! duration and the measurement's options, checked by the real argument parser before anything
//! runs (a bad option is an error at its line of the study file).

use rtvirt_model::study::{Cell, MeasureKind, OptionValue, Place, Study};
use rtvirt_model::{InputError, Nanos};

/// The arguments of each run of `cell` (without the binary), for runs of `duration`.
pub fn arguments(study: &Study, cell: &Cell, duration: Nanos) -> Vec<String> {
    let m = &study.measurements[cell.measurement];
    let mut argv: Vec<String> = match m.kind {
        MeasureKind::Timer => vec!["measure".into(), "timer".into()],
        MeasureKind::NetRr => vec!["measure".into(), "net".into(), "client".into()],
        MeasureKind::NetStream => vec!["measure".into(), "net".into(), "client".into(), "--stream".into()],
        MeasureKind::Tasks => vec!["measure".into(), "tasks".into()],
    };
    for (key, value) in &m.options {
        if m.kind == MeasureKind::Tasks && key == "scenario" {
            argv.extend(text(value));
            continue;
        }
        push_option(&mut argv, key, value);
    }
    argv.extend(["--duration".into(), duration.to_string()]);
    argv.extend(["--in".into(), cell.place.as_str().into()]);
    if let Some(kernel) = &cell.guest_kernel {
        argv.extend(["--guest-kernel".into(), kernel.clone()]);
    }
    for load in &study.loads[cell.load].loads {
        let prefix = if cell.place == Place::Vm { "host:" } else { "" };
        argv.extend(["--load".into(), format!("{prefix}{load}")]);
    }
    argv.extend(["--format".into(), "json".into()]);
    argv
}

/// `key = value` as `--key value` (`true`: the flag alone, `false`: nothing, a list: the option
/// once per element).
fn push_option(argv: &mut Vec<String>, key: &str, value: &OptionValue) {
    let flag = format!("--{}", key.replace('_', "-"));
    match value {
        OptionValue::Flag(true) => argv.push(flag),
        OptionValue::Flag(false) => {}
        OptionValue::List(items) => {
            for item in items {
                push_option(argv, key, item);
            }
        }
        other => argv.extend([flag].into_iter().chain(text(other))),
    }
}

fn text(value: &OptionValue) -> Option<String> {
    match value {
        OptionValue::Integer(i) => Some(i.to_string()),
        OptionValue::Float(f) => Some(f.to_string()),
        OptionValue::Text(t) => Some(t.clone()),
        OptionValue::Flag(b) => Some(b.to_string()),
        OptionValue::List(_) => None,
    }
}

/// Check every measurement's command line with `parse` (the binary's own parser), once per
/// measurement and place; an error names the measurement's options in the study file.
pub fn check(study: &Study, cells: &[Cell], parse: &dyn Fn(&[String]) -> Result<(), String>) -> Result<(), InputError> {
    for cell in cells {
        let argv = arguments(study, cell, study.duration);
        if let Err(e) = parse(&argv) {
            let first = e.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
            let field = format!("measure[{}].options", cell.measurement);
            return Err(
                study.locate(InputError::field(field, format!("`rtvirt {}` is refused: {first}", argv.join(" "))))
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_the_measure_command_line() {
        let text = "name = \"s\"\nrepeats = 1\nduration = \"2s\"\nwhere = [\"vm\"]\n[[load]]\nname = \"l\"\n\
                    loads = [\"syscalls:1@0\"]\n[[measure]]\nname = \"rr\"\nkind = \"net-rr\"\n\
                    options = { tcp = true, udp = false, size = 64, arrivals = \"back-to-back\" }\n";
        let study = Study::from_toml(text, None).unwrap();
        let cells = study.cells();
        assert_eq!(
            arguments(&study, &cells[0], Nanos::from_secs(2)).join(" "),
            "measure net client --arrivals back-to-back --size 64 --tcp --duration 2s --in vm --guest-kernel rt \
             --load host:syscalls:1@0 --format json"
        );
    }
}
