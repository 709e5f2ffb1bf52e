//! The command lines rtvirt runs elsewhere, all made here: this very command re-run in a
//! container or a guest (from its parsed arguments, [`CommandLine`]), and the net server and
//! client started as peers of a measurement ([`net_server`], [`net_client`]).
//!
//! A re-run command is rebuilt from clap's parse (each argument given on the command line, with
//! its raw values, in the order given), not by editing `std::env::args()` text: options are
//! removed or replaced by their definition (their id), whatever spelling the user chose
//! (`--in vm`, `--in=vm`), and a value that starts with `-` travels as `--name=VALUE` (and
//! positional ones after `--`), so that no value is taken for an option. Arguments go as argv
//! (`Command::args`), never through a shell; a guest's command line is quoted once, by
//! `rtvirt_vm::init::shell_line`.

use clap::parser::ValueSource;
use clap::{ArgMatches, Command};
use rtvirt_model::Nanos;
use std::ffi::OsString;

/// A command of this binary as the user gave it: the subcommand path (`measure timer`) and each
/// argument given explicitly (defaults are left to the command that runs it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandLine {
    path: Vec<String>,
    given: Vec<Given>,
}

/// One argument given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Given {
    /// clap's id of the argument (the field name).
    id: String,
    /// `--long`, or None for a positional argument.
    long: Option<String>,
    /// Raw values (empty for a flag).
    values: Vec<OsString>,
}

impl CommandLine {
    /// The leaf subcommand of `matches` (parsed by `command`), with the arguments given to it.
    pub fn from_matches(command: &Command, matches: &ArgMatches) -> CommandLine {
        let (mut command, mut matches) = (command, matches);
        let mut path = Vec::new();
        while let Some((name, sub)) = matches.subcommand() {
            path.push(name.to_string());
            command = command.find_subcommand(name).expect("clap parsed a subcommand it knows");
            matches = sub;
        }
        let mut given: Vec<(usize, Given)> = command
            .get_arguments()
            .filter(|arg| matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine))
            .map(|arg| {
                let id = arg.get_id().as_str();
                let values = if arg.get_action().takes_values() {
                    matches.get_raw(id).into_iter().flatten().map(OsString::from).collect()
                } else {
                    Vec::new()
                };
                let first = matches.index_of(id).unwrap_or(usize::MAX);
                (first, Given { id: id.to_string(), long: arg.get_long().map(str::to_string), values })
            })
            .collect();
        given.sort_by_key(|(first, _)| *first);
        CommandLine { path, given: given.into_iter().map(|(_, g)| g).collect() }
    }

    /// Without the arguments of these ids.
    pub fn without(mut self, ids: &[&str]) -> CommandLine {
        self.given.retain(|g| !ids.contains(&g.id.as_str()));
        self
    }

    /// Whether the argument of this id was given.
    pub fn has(&self, id: &str) -> bool {
        self.given.iter().any(|g| g.id == id)
    }

    /// The first value given to the argument of this id.
    pub fn value(&self, id: &str) -> Option<&OsString> {
        self.given.iter().find(|g| g.id == id).and_then(|g| g.values.first())
    }

    /// With option `--long` (id `id`) set to `value`, in the place of what was given.
    pub fn with_option(self, id: &str, long: &str, value: impl Into<OsString>) -> CommandLine {
        self.with(Given { id: id.into(), long: Some(long.into()), values: vec![value.into()] })
    }

    /// With flag `--long` (id `id`), in the place of what was given.
    pub fn with_flag(self, id: &str, long: &str) -> CommandLine {
        self.with(Given { id: id.into(), long: Some(long.into()), values: Vec::new() })
    }

    /// With positional argument `id` set to `value`, in the place of what was given.
    pub fn with_positional(self, id: &str, value: impl Into<OsString>) -> CommandLine {
        self.with(Given { id: id.into(), long: None, values: vec![value.into()] })
    }

    fn with(mut self, given: Given) -> CommandLine {
        match self.given.iter_mut().find(|g| g.id == given.id) {
            Some(place) => *place = given,
            None => self.given.push(given),
        }
        self
    }

    /// The positional arguments and options, without the subcommand path: `--name VALUE`, or
    /// `--name=VALUE` for a value that starts with `-`; positional arguments first, or last
    /// after `--` when one of them starts with `-`.
    pub fn arguments(&self) -> Vec<OsString> {
        let mut options = Vec::new();
        for g in &self.given {
            let Some(long) = &g.long else { continue };
            if g.values.is_empty() {
                options.push(OsString::from(format!("--{long}")));
            }
            for value in &g.values {
                if looks_like_option(value) {
                    let mut option = OsString::from(format!("--{long}="));
                    option.push(value);
                    options.push(option);
                } else {
                    options.extend([OsString::from(format!("--{long}")), value.clone()]);
                }
            }
        }
        let positional: Vec<OsString> =
            self.given.iter().filter(|g| g.long.is_none()).flat_map(|g| g.values.iter().cloned()).collect();
        if positional.iter().any(looks_like_option) {
            options.push("--".into());
            options.extend(positional);
            options
        } else {
            positional.into_iter().chain(options).collect()
        }
    }

    /// The whole command line: subcommand path, then [`Self::arguments`].
    pub fn argv(&self) -> Vec<OsString> {
        self.path.iter().map(OsString::from).chain(self.arguments()).collect()
    }

    /// [`Self::argv`] as text, for a guest's command line (which is text).
    pub fn argv_text(&self) -> anyhow::Result<Vec<String>> {
        self.argv().into_iter().map(text).collect()
    }

    /// [`Self::arguments`] as text.
    pub fn arguments_text(&self) -> anyhow::Result<Vec<String>> {
        self.arguments().into_iter().map(text).collect()
    }
}

fn looks_like_option(value: &OsString) -> bool {
    value.to_string_lossy().starts_with('-')
}

fn text(arg: OsString) -> anyhow::Result<String> {
    arg.into_string().map_err(|a| anyhow::anyhow!("argument {a:?} is not UTF-8: a guest's command line must be"))
}

/// `measure net server` listening on `listen` for `duration`, with `--tcp` (else `--udp`), and
/// the other options given (e.g. `--service-time`, `--format json`). The peer of a client whose
/// duration was checked: it outlasts the client by a margin, hence `--force` (an hour's client
/// needs a server for a little more than an hour).
pub fn net_server(listen: &str, duration: Nanos, tcp: bool, more: &[&str]) -> Vec<String> {
    let mut argv: Vec<String> = ["measure", "net", "server"].map(String::from).to_vec();
    argv.extend(["--listen".into(), listen.to_string(), "--duration".into(), duration.to_string()]);
    argv.push("--force".into());
    argv.push(protocol_flag(tcp).into());
    argv.extend(more.iter().map(|s| s.to_string()));
    argv
}

/// `measure net client` to `connect` for `duration`, with `--tcp` (else `--udp`), JSON output,
/// and the client's further options `more`.
pub fn net_client(connect: &str, duration: Nanos, tcp: bool, more: &[String]) -> Vec<String> {
    let mut argv: Vec<String> = ["measure", "net", "client"].map(String::from).to_vec();
    argv.extend(["--connect".into(), connect.to_string(), "--duration".into(), duration.to_string()]);
    argv.push(protocol_flag(tcp).into());
    argv.extend(["--format".into(), "json".into()]);
    argv.extend(more.iter().cloned());
    argv
}

/// `--tcp` or `--udp`.
pub fn protocol_flag(tcp: bool) -> &'static str {
    if tcp {
        "--tcp"
    } else {
        "--udp"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser, Subcommand};

    #[derive(Parser)]
    struct Tool {
        #[command(subcommand)]
        command: Top,
    }

    #[derive(Subcommand)]
    enum Top {
        Measure {
            #[command(subcommand)]
            what: What,
        },
    }

    #[derive(Subcommand)]
    enum What {
        Timer {
            file: Option<String>,
            #[arg(long = "in", default_value = "host")]
            r#in: String,
            #[arg(long)]
            duration: Option<String>,
            #[arg(long, value_delimiter = ',')]
            kernel: Vec<String>,
            #[arg(long)]
            load: Vec<String>,
            #[arg(long)]
            force: bool,
        },
    }

    fn line(args: &[&str]) -> CommandLine {
        let command = Tool::command();
        let matches =
            command.clone().try_get_matches_from(std::iter::once("tool").chain(args.iter().copied())).unwrap();
        CommandLine::from_matches(&command, &matches)
    }

    fn strings(args: Vec<OsString>) -> Vec<String> {
        args.into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    #[test]
    fn the_line_is_rebuilt_from_the_parse_in_the_order_given() {
        let l = line(&["measure", "timer", "--load", "a b", "--in=vm", "--duration", "5s", "--force", "--load=c"]);
        assert_eq!(
            strings(l.argv()),
            ["measure", "timer", "--load", "a b", "--load", "c", "--in", "vm", "--duration", "5s", "--force"]
        );
        assert_eq!(
            strings(l.clone().without(&["in", "load"]).argv()),
            ["measure", "timer", "--duration", "5s", "--force"]
        );
        assert_eq!(
            strings(l.without(&["load", "force"]).with_option("in", "in", "host").arguments()),
            ["--in", "host", "--duration", "5s"]
        );
    }

    #[test]
    fn values_that_look_like_options_stay_values() {
        let l = line(&["measure", "timer", "--duration=-1s", "--kernel", "rt,nrt", "--", "-file"]);
        assert_eq!(
            strings(l.argv()),
            ["measure", "timer", "--duration=-1s", "--kernel", "rt", "--kernel", "nrt", "--", "-file"]
        );
        let again = line(&l.argv().iter().map(|a| a.to_str().unwrap()).collect::<Vec<_>>());
        assert_eq!(again, l, "the rebuilt line parses to the same arguments");
        let l = line(&["measure", "timer", "--duration", "1s", "plain.toml"]).with_positional("file", "files/s.toml");
        assert_eq!(strings(l.argv()), ["measure", "timer", "files/s.toml", "--duration", "1s"]);
    }

    #[test]
    fn defaults_are_left_to_the_command_that_runs_it() {
        assert_eq!(strings(line(&["measure", "timer"]).argv()), ["measure", "timer"]);
    }

    #[test]
    fn peer_commands() {
        assert_eq!(
            net_server("10.0.0.2:9000", Nanos::from_secs(3), true, &["--format", "json"]),
            [
                "measure",
                "net",
                "server",
                "--listen",
                "10.0.0.2:9000",
                "--duration",
                "3s",
                "--force",
                "--tcp",
                "--format",
                "json"
            ]
        );
        let more = ["--size".to_string(), "64".into()];
        assert_eq!(
            net_client("10.0.0.2:9000", Nanos::from_secs(3), false, &more),
            [
                "measure",
                "net",
                "client",
                "--connect",
                "10.0.0.2:9000",
                "--duration",
                "3s",
                "--udp",
                "--format",
                "json",
                "--size",
                "64"
            ]
        );
    }
}
