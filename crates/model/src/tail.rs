//! `rtvirt.tail/v1` and `rtvirt.gate/v1`: what extreme-value theory says about a run's tail
//! (`rtvirt tail`, `rtvirt gate`; the statistics are in the crate rtvirt-tail). A report says
//! whether the model applies (`applicable`, with the `reasons` when not, and every test that
//! decided it), the fitted generalised Pareto distribution, and per horizon the return level:
//! the value exceeded once on average over that horizon of running at the sample rate of the
//! run, with a confidence interval. When the model does not apply, `return_levels` is empty: no
//! number is offered as if it were valid.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const TAIL_SCHEMA: &str = "rtvirt.tail/v1";
pub const GATE_SCHEMA: &str = "rtvirt.gate/v1";

/// The tail of one series of samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "rtvirt.tail/v1")]
pub struct TailReport {
    pub schema: String,
    /// The series fitted: file and series (e.g. `run.json: latency_ns`).
    pub source: String,
    /// How the samples were read: `ordered` (every sample in time order), `histogram+blocks`
    /// (a lossless histogram and per-interval maxima in time order) or `histogram` (no time
    /// order).
    pub input: String,
    pub samples: u64,
    /// Wall time the samples cover; with `samples` it gives the sample rate.
    pub duration_ns: u64,
    /// The largest sample.
    pub max_ns: u64,
    /// The model applies: every test passed and a threshold was found.
    pub applicable: bool,
    /// Why not, one sentence each (empty when applicable).
    pub reasons: Vec<String>,
    /// The generalised Pareto fit to the exceedances of the threshold (absent when too few
    /// samples to try one); with `declustering`, the fit to the cluster maxima.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<GpdFit>,
    /// Present when the samples' exceedances cluster (test `independence` failed) and the
    /// model applies to the clusters' maxima instead: `fit` and `return_levels` are theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declustering: Option<Declustering>,
    /// The tests that decide whether the model applies, in the order they were run.
    pub tests: Vec<TailTest>,
    /// Per horizon asked for (empty when not applicable).
    pub return_levels: Vec<ReturnLevel>,
}

/// A generalised Pareto distribution fitted by maximum likelihood to the exceedances
/// `x - threshold_ns` of the samples above the threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpdFit {
    pub threshold_ns: u64,
    /// How the threshold was chosen (the rule, in words).
    pub threshold_rule: String,
    /// Samples above the threshold.
    pub exceedances: u64,
    /// Scale sigma of the GPD, in ns.
    pub scale_ns: f64,
    /// Shape xi: 0 exponential tail, > 0 heavy (Pareto-type), < 0 bounded.
    pub shape: f64,
    /// Maximised log-likelihood.
    pub log_likelihood: f64,
    /// The upper end point `threshold - scale/shape` of a bounded tail (shape < 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_bound_ns: Option<f64>,
}

/// Intervals declustering (Ferro & Segers 2003): the exceedances split into clusters at the
/// longest gaps between them, as many clusters as the extremal index says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Declustering {
    /// The series declustered: `samples` (in time order) or `interval maxima` (each interval one
    /// value of the series).
    pub series: String,
    pub method: String,
    /// Extremal index of the series' exceedances of the threshold.
    pub extremal_index: f64,
    /// Gaps (in values of the series) longer than this separate clusters.
    pub run_length: u64,
    /// Clusters, one maximum each (the fit's exceedances).
    pub clusters: u64,
}

/// One test of the model's assumptions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TailTest {
    /// `goodness_of_fit`, `independence`, `stationarity_trend`, `stationarity_rate`; after
    /// declustering `cluster_goodness_of_fit`, `cluster_independence`.
    pub name: String,
    /// The method, with its reference.
    pub method: String,
    /// The test statistic (or the estimate, e.g. the extremal index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistic: Option<f64>,
    /// The value the statistic is compared with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical: Option<f64>,
    /// Two-sided p-value, for the tests that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// `None`: the test could not be run (e.g. no time order in the input).
    pub passed: Option<bool>,
    pub detail: String,
}

/// The return level of one horizon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReturnLevel {
    pub horizon_ns: u64,
    /// The value exceeded once on average over the horizon.
    pub estimate_ns: u64,
    pub ci_low_ns: u64,
    /// `null`: the interval has no upper end (a heavy tail the data cannot bound).
    pub ci_high_ns: Option<u64>,
    /// Confidence level of the interval, e.g. 0.95.
    pub confidence: f64,
    /// How the interval was computed.
    pub method: String,
}

/// The verdict of `rtvirt gate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The upper confidence limit of the horizon's return level is below the limit (exit 0).
    Pass,
    /// The lower confidence limit is above the limit, or a sample already is (exit 1).
    Fail,
    /// The data cannot decide, or the model does not apply (exit 3).
    Inconclusive,
}

impl Verdict {
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::Inconclusive => 3,
        }
    }
}

/// `rtvirt gate`: a limit checked against a horizon's return level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "rtvirt.gate/v1")]
pub struct GateReport {
    pub schema: String,
    pub verdict: Verdict,
    pub max_ns: u64,
    pub horizon_ns: u64,
    pub confidence: f64,
    /// Why, in one sentence.
    pub reason: String,
    /// For an inconclusive verdict: the measurement length that would likely decide, estimated
    /// from the fit (interval width shrinking as 1/sqrt(length), estimate unchanged); absent
    /// when no length would (the model does not apply for another reason than too little data,
    /// or the estimate is the limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed_duration_ns: Option<u64>,
    pub tail: TailReport,
}
