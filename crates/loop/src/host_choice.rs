//! The host a plan is for and the promise asked for, as a user names them (`--host`,
//! `--host-model`, `--hard`, `--quantile` on the command line; the keywords of Python's
//! `rtvirt.plan`), turned into the one planning path's [`PlanHost`] and [`Guarantee`]
//! (`rtvirt_analysis::requests`). Both front ends resolve them here, so that the same names give
//! the same plan.

use rtvirt_analysis::requests::{Guarantee, PlanHost};
use rtvirt_model::hostmodel::HostModel;
use rtvirt_model::InputError;
use rtvirt_probe::this_host::ThisHost;
use std::path::{Path, PathBuf};

/// The environment variable naming the default host (`this`, `ideal` or a preset).
pub const HOST_ENV: &str = "RTVIRT_HOST";

/// A host and promise as named by a user; `field` prefixes the names in errors ("--" for flags,
/// "" for keywords).
#[derive(Debug, Clone, Default)]
pub struct HostChoice {
    /// "this", "ideal" or a preset name; None: $RTVIRT_HOST, else "this".
    pub host: Option<String>,
    /// A host model file (rtvirt.hostmodel/v1); wins over `host`.
    pub host_model: Option<PathBuf>,
    /// Promise the worst case.
    pub hard: bool,
    /// Charge the host's costs at this quantile (default [`rtvirt_analysis::requests::DEFAULT_QUANTILE`]).
    pub quantile: Option<f64>,
    /// Prefix of the names in errors: "--" (flags) or "" (keywords).
    pub field: &'static str,
}

/// A resolved host with the notes to show its user (why a cached calibration was not used).
pub struct Resolved {
    pub host: PlanHost,
    pub notes: Vec<String>,
}

impl HostChoice {
    /// `host`, else $RTVIRT_HOST (None: neither, this host).
    pub fn host_name(&self) -> Option<String> {
        self.host.clone().or_else(|| std::env::var(HOST_ENV).ok().filter(|h| !h.is_empty()))
    }

    /// The promise asked for.
    pub fn guarantee(&self) -> Result<Guarantee, InputError> {
        if self.hard && self.quantile.is_some() {
            return Err(InputError::field(
                self.name("hard"),
                format!("cannot be combined with {}", self.name("quantile")),
            ));
        }
        if self.hard {
            return Ok(Guarantee::Hard);
        }
        match self.quantile {
            None => Ok(Guarantee::default()),
            Some(q) if (0.5..1.0).contains(&q) => Ok(Guarantee::Quantile(q)),
            Some(q) => Err(InputError::field(self.name("quantile"), format!("{q}: expected 0.5 <= Q < 1"))),
        }
    }

    /// The host, placing on `cores` of its CPUs; this host's calibration is looked up under
    /// `state_dir` (None: rtvirt's state directory).
    pub fn resolve(&self, state_dir: Option<&Path>, cores: u32) -> Result<Resolved, InputError> {
        if let Some(path) = &self.host_model {
            let model = HostModel::from_file(path)?;
            let host = PlanHost::of_model(format!("host model {}", path.display()), model, cores);
            return Ok(Resolved { host, notes: vec![] });
        }
        match self.host_name().as_deref().unwrap_or("this") {
            "ideal" => Ok(Resolved { host: PlanHost::ideal(), notes: vec![] }),
            "this" => {
                let dir = state_dir.map_or_else(rtvirt_host::journal::default_state_dir, Path::to_path_buf);
                let this = rtvirt_probe::this_host::this_host(&dir);
                let notes = this.notes.clone();
                Ok(Resolved { host: this_host_plan(this, cores), notes })
            }
            name => match HostModel::preset(name) {
                Some(model) => {
                    Ok(Resolved { host: PlanHost::of_model(format!("preset {name}"), model, cores), notes: vec![] })
                }
                None => {
                    let names: Vec<&str> = HostModel::PRESETS.iter().map(|p| p.0).collect();
                    Err(InputError::field(
                        self.name("host"),
                        format!("\"{name}\": expected this, ideal or a preset ({})", names.join(", ")),
                    ))
                }
            },
        }
    }

    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.field)
    }
}

/// This host as a plan's host, placing on `cores` of its CPUs.
pub fn this_host_plan(this: ThisHost, cores: u32) -> PlanHost {
    let name = match &this.calibration {
        Some(p) => format!("this host (calibrated: {})", p.display()),
        None => "this host (not calibrated: the default costs of docs/plan.md; run `rtvirt host calibrate`)".into(),
    };
    PlanHost::of_model(name, this.model, cores)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(host: &str) -> HostChoice {
        HostChoice { host: Some(host.into()), field: "", ..HostChoice::default() }
    }

    #[test]
    fn presets_and_ideal_resolve_and_an_unknown_name_is_a_located_error() {
        assert!(choice("ideal").resolve(None, 1).unwrap().host.model.is_none());
        let stock = choice("stock").resolve(None, 2).unwrap().host;
        assert_eq!(stock.name, "preset stock");
        assert!(stock.model.is_some());
        let e = choice("nope").resolve(None, 1).err().unwrap();
        assert_eq!(e.at.field.as_deref(), Some("host"));
        assert!(e.to_string().contains("expected this, ideal or a preset"), "{e}");
    }

    #[test]
    fn the_guarantee_is_checked_and_named_with_the_front_ends_prefix() {
        let flags = HostChoice { quantile: Some(1.0), field: "--", ..HostChoice::default() };
        assert_eq!(flags.guarantee().err().unwrap().at.field.as_deref(), Some("--quantile"));
        let both = HostChoice { quantile: Some(0.9), hard: true, ..HostChoice::default() };
        assert_eq!(both.guarantee().err().unwrap().at.field.as_deref(), Some("hard"));
        assert_eq!(HostChoice { hard: true, ..HostChoice::default() }.guarantee().unwrap(), Guarantee::Hard);
        let q = HostChoice { quantile: Some(0.95), ..HostChoice::default() };
        assert_eq!(q.guarantee().unwrap(), Guarantee::Quantile(0.95));
        assert_eq!(HostChoice::default().guarantee().unwrap(), Guarantee::default());
    }
}
