//! rtvirt-analysis: the planner's mathematics (pure, no I/O): demand and supply bound functions,
//! exact minimal resource interfaces (PRM, EDP), probabilistic task budgets, partitioning of the
//! guests' servers onto cores, the largest feasible rho, and deployable text for the plan.
//!
//! - [`adapt`]: adaptive reservations - the online controller (`host adapt`, `simulate --adapt`).
//! - [`budgets`]: per-task `c` (Cantelli bound, samples quantile or WCET) - Burns 2014 step 1.
//! - [`dbf`]: `dbf_EDF`, `rbf_FP`, hyperperiods and check points.
//! - [`sbf`]: PRM/EDP supply bound functions (Shin & Lee 2003; Easwaran, Anand & Lee 2007).
//! - [`schedtest`]: exact EDF/FP schedulability on a supply.
//! - [`interface`]: least-bandwidth interface per guest - Burns 2014 step 2.
//! - [`mpr`]: the multiprocessor periodic resource `(Pi, Theta, m')` and its `m'` servers
//!   (Shin, Easwaran & Lee 2008; Easwaran, Shin & Lee 2009).
//! - [`gedf`]: global EDF on an MPR (Shin, Easwaran & Lee 2008 with Bertogna, Cirinei & Lipari 2005).
//! - [`gfp`]: global fixed priority on an MPR (Bertogna & Cirinei 2007's response-time analysis).
//! - [`mpr_interface`]: least MPR interface of a guest scheduled globally over its vCPUs.
//! - [`overhead`]: a host model's costs charged to the interfaces (Phan et al. 2013).
//! - [`packing`]: which vCPU of a partitioned multi-vCPU guest runs which task.
//! - [`partition`]: servers onto cores with exact admission - Burns 2014 step 3.
//! - [`planner`]: scenario -> `rtvirt.plan/v1`; `planner::max_rho`: the largest uniform rho that fits.
//! - [`requests`]: the one planning path - scenario + host + options + promise -> plan with
//!   every check; every front end calls it, nothing else calls the planner.
//! - [`needs`]: what a plan that does not fit needs, setting by setting.
//! - [`emit`]: chrt script, Xen RTDS commands, libvirt cputune, CARTS XML.
//! - [`gen`]: seeded Baker-model workloads (tests, benchmarks).
//!
//! Entry points: [`requests::plan`] -> [`planner::Planned`] holding the `rtvirt.plan/v1` plan; [`maxrho::max_rho`]; [`emit::chrt`], [`emit::rtds`],
//! [`emit::libvirt`] for `rtvirt plan --emit`.
//!
//! Invariants: no I/O and no OS calls (scenarios come checked from rtvirt-model, plans go back as
//! types); the same scenario and options give the same plan whatever the thread count (guests
//! are analysed in parallel with rayon, results kept in scenario order); the exact analysis of a
//! guest is bounded ([`dbf::MAX_CHECK_POINTS`]) and a guest beyond it is an input error, never an
//! approximation; every function cites its paper and equation (docs/sources.md). The user guide,
//! the tests and the known limits are in docs/plan.md.

pub mod adapt;
pub mod budgets;
pub mod dbf;
pub mod emit;
pub mod gedf;
pub mod gen;
pub mod gfp;
pub mod interface;
pub mod mpr;
pub mod mpr_interface;
pub mod needs;
pub mod overhead;
pub mod packing;
pub mod partition;
pub mod planner;
pub mod requests;
pub mod sbf;
pub mod schedtest;
pub mod vcpus;
