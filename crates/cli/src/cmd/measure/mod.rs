//! `rtvirt measure timer|net|tasks`: real measurements (rtvirt-probe), on the host, `--in
//! container` or `--in vm`, with optional `--load` interference; results are
//! `rtvirt.results/v1`. One module per measurement: each checks its arguments, then hands itself
//! to the placement driver (`crate::placement`), which runs it where `--in` says.

mod actions;
mod args;
pub(crate) mod net;
mod output;
mod stream;
mod tasks;
mod timer;

pub use args::MeasureArgs;
pub use output::progress;

use crate::cli_common::CmdResult;
use crate::placement::command_line::CommandLine;
use args::{NetWhat, What};

/// Run the measurement `args`, given on the command line as `line`.
pub fn run(args: MeasureArgs, line: CommandLine) -> CmdResult {
    rtvirt_os::signals::install();
    match args.what {
        What::Timer(t) => timer::run(*t, line),
        What::Net(NetWhat::Server(s)) => net::run_server(s, line),
        What::Net(NetWhat::Client(c)) if c.stream => stream::run(c, line),
        What::Net(NetWhat::Client(c)) => net::run_client(c, line),
        What::Tasks(t) => tasks::run(t, line),
        What::TasksWorker => std::process::exit(rtvirt_probe::tasks::worker::worker_main()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::vm::{client_arguments, guest_line};
    use clap::{CommandFactory, Parser, Subcommand};

    #[derive(Parser)]
    struct Rtvirt {
        #[command(subcommand)]
        command: Top,
    }

    #[derive(Subcommand)]
    enum Top {
        Measure(MeasureArgs),
    }

    fn line(text: &str) -> CommandLine {
        let command = Rtvirt::command();
        let matches = command.clone().try_get_matches_from(std::iter::once("rtvirt").chain(text.split_whitespace()));
        CommandLine::from_matches(&command, &matches.unwrap())
    }

    fn text(line: CommandLine) -> Vec<String> {
        line.argv_text().unwrap()
    }

    #[test]
    fn a_container_runs_the_command_as_given_without_in() {
        let l = line("measure timer --in container --load cpu:2@0 --duration=5s --format json");
        assert_eq!(
            text(l.without(&["in"])),
            ["measure", "timer", "--load", "cpu:2@0", "--duration", "5s", "--format", "json"]
        );
    }

    #[test]
    fn a_guest_runs_scenario_and_plan_from_its_files() {
        let l = line("measure tasks s.toml --rho 0.5 --plan p.json --duration 2s --in vm");
        let l = guest_line(l).without(&["rho"]).with_option("plan", "plan", "files/plan.json");
        let l = l.with_positional("scenario", "files/scenario.toml");
        assert_eq!(
            text(l),
            ["measure", "tasks", "files/scenario.toml", "--plan", "files/plan.json", "--duration", "2s"]
        );
    }

    #[test]
    fn host_side_options_are_removed_from_the_guest_command() {
        let l = line(concat!(
            "measure timer --in vm --duration 5s --guest-kernel=rt,nrt --load host:syscalls --format json ",
            "--interval 1ms"
        ));
        assert_eq!(text(guest_line(l)), ["measure", "timer", "--duration", "5s", "--interval", "1ms"]);
        let l = line("measure timer --in vm --boot-timeout 150s --job-timeout=20min --duration 10min --force");
        assert_eq!(text(guest_line(l)), ["measure", "timer", "--duration", "10min", "--force"]);
        let l =
            line("measure net client --in=vm --tcp --connect 1.2.3.4:9 --arrivals poisson:100 --duration 3s --size 64");
        assert_eq!(client_arguments(&l).unwrap(), ["--arrivals", "poisson:100", "--size", "64"]);
        let l = line("measure net client --in vm --duration 3s --trace t.json --format json");
        assert_eq!(client_arguments(&l).unwrap(), ["--explain"], "the trace is written on the host, merged");
        assert!(l.has("trace") && l.value("trace") == Some(&std::ffi::OsString::from("t.json")));
    }
}
