//! Progress bars on stderr for long work (a sweep's runs, a long simulation), drawn by indicatif
//! and only when stderr is a terminal, so that logs and pipes get no control characters.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bar of `template` (indicatif's syntax), hidden unless stderr is a terminal; its length is
/// set as the work reports it.
pub fn bar(template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(ProgressStyle::with_template(template).expect("a valid progress template"));
    bar
}

/// A spinner of `template` ticking on its own (for work of unknown length), hidden unless stderr
/// is a terminal.
pub fn spinner(template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template(template).expect("a valid progress template"));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}
