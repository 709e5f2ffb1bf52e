//! `rtvirt measure timer|net|tasks`: real measurements (rtvirt-probe), on the host or
//! `--in container`, with optional `--load` interference; results are `rtvirt.results/v1`.

mod args;
mod net;
mod output;
mod tasks;
mod timer;

pub use args::MeasureArgs;
pub use output::progress;

use crate::cli_common::CmdResult;
use args::{NetWhat, What};

pub fn run(a: MeasureArgs) -> CmdResult {
    rtvirt_probe::signals::install();
    match a.what {
        What::Timer(t) => timer::run(t),
        What::Net(NetWhat::Server(s)) => net::run_server(s),
        What::Net(NetWhat::Client(c)) => net::run_client(c),
        What::Tasks(t) => tasks::run(t),
        What::TasksWorker => std::process::exit(rtvirt_probe::tasks::worker::worker_main()),
    }
}
