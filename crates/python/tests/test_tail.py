"""rtvirt.tail against an independent implementation: the generalised Pareto fit of the exceedances
is scipy.stats.genpareto's maximum-likelihood fit (location fixed at 0) on the same data, and the
return level is the fitted GPD's quantile."""

import numpy as np
import pytest
from scipy import stats

import rtvirt


def _exceedances(samples, report):
    u = report["fit"]["threshold_ns"]
    return samples[samples > u] - u


@pytest.mark.parametrize("shape, scale", [(0.0, 2000.0), (0.2, 1000.0), (-0.2, 3000.0)])
def test_fit_is_scipys_genpareto_fit(shape, scale):
    rng = np.random.default_rng(38)
    samples = np.round(10_000 + stats.genpareto.rvs(shape, scale=scale, size=60_000, random_state=rng)).astype(np.int64)
    report = rtvirt.tail(samples, "60s", horizons=["1h"])
    fit = report["fit"]
    y = _exceedances(samples, report).astype(float)
    assert len(y) == fit["exceedances"]
    c, _, s = stats.genpareto.fit(y, floc=0)
    ll_rtvirt = stats.genpareto.logpdf(y, fit["shape"], scale=fit["scale_ns"]).sum()
    ll_scipy = stats.genpareto.logpdf(y, c, scale=s).sum()
    # The same maximum: rtvirt's is at least as likely as scipy's, and the parameters agree.
    assert ll_rtvirt >= ll_scipy - 1e-6
    assert fit["log_likelihood"] == pytest.approx(ll_rtvirt, rel=1e-9)
    assert fit["shape"] == pytest.approx(c, abs=0.01)
    assert fit["scale_ns"] == pytest.approx(s, rel=0.01)


def test_return_level_is_the_fitted_quantile():
    rng = np.random.default_rng(7)
    samples = np.round(10_000 + rng.exponential(2000.0, size=60_000)).astype(np.int64)
    report = rtvirt.tail(samples, "60s", horizons=["1h", "12h"])
    assert report["applicable"], report["reasons"]
    fit = report["fit"]
    zeta = fit["exceedances"] / len(samples)
    frame = rtvirt.tail_levels(report)
    assert list(frame["horizon_ns"]) == [3_600_000_000_000, 43_200_000_000_000]
    for row in frame.itertuples():
        m = row.horizon_ns / 60e9 * len(samples)  # samples in the horizon
        level = fit["threshold_ns"] + stats.genpareto.ppf(1 - 1 / (m * zeta), fit["shape"], scale=fit["scale_ns"])
        assert row.estimate_ns == pytest.approx(level, abs=1.0)
        assert row.ci_low_ns < row.estimate_ns < row.ci_high_ns


def test_bad_arguments_are_input_errors():
    with pytest.raises(rtvirt.InputError, match="horizons"):
        rtvirt.tail([1, 2, 3], "1s", horizons=[3600])
    with pytest.raises(rtvirt.InputError, match="confidence"):
        rtvirt.tail([1, 2, 3], "1s", confidence=1.5)
