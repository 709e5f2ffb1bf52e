//! Where a measurement runs: on this host, in a container, or in QEMU guests.

pub mod container;
pub mod guests;
pub mod options;
pub mod vm;

use options::Common;
use rtvirt_model::results::Results;
use rtvirt_probe::load;

/// Run the loads of `common` around `body`, recording what they achieved in the result.
pub fn with_loads(common: &Common, body: impl FnOnce() -> anyhow::Result<Results>) -> anyhow::Result<Results> {
    for l in &common.load {
        l.validate("--load", common.force)?;
    }
    let running = load::start_all(&common.load)?;
    let out = body();
    let achieved = load::stop_all(running);
    let mut r = out?;
    if let Some(env) = r.environment.as_mut() {
        env.load.extend(achieved);
    }
    Ok(r)
}
