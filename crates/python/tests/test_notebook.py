"""docs/notebooks/seeds5_dsr_vs_rho.py runs end to end on a small grid, its sweep on the test
session's Ray cluster, and draws its figure."""

import runpy


def test_the_notebook_runs_on_a_small_grid(root, ray_cluster, tmp_path, monkeypatch, capsys):
    figure = tmp_path / "dsr.png"
    monkeypatch.setenv("RTVIRT_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("RTVIRT_NOTEBOOK_ENGINE", "ray")
    monkeypatch.setenv("RTVIRT_NOTEBOOK_OUT", str(figure))
    names = runpy.run_path(str(root / "docs" / "notebooks" / "seeds5_dsr_vs_rho.py"), run_name="__main__")
    printed = capsys.readouterr().out
    assert "6 cells, 0 failed cells" in printed
    dsr = names["dsr"]
    assert list(dsr.columns) == ["vm30", "vm50", "vm70"] and list(dsr.index) == [0.3, 0.6, 0.9]
    assert ((dsr >= 0) & (dsr <= 1)).all().all()
    # the plans need more bandwidth as rho grows
    bandwidth = names["plans"].pivot(index="rho", columns="guest", values="bandwidth")
    assert (bandwidth.diff().dropna() >= 0).all().all()
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 10_000
