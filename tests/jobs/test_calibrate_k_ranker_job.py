"""jobs/calibrate_k_ranker.py: its exit status and message where the checkpoint has no ranker to calibrate (the
calibration itself: tests/pipeline/test_k_ranker_fit.py)."""

from __future__ import annotations

from tests.job_scripts import load_job


def test_a_checkpoint_without_a_ranker_is_refused_with_what_to_do(tmp_path, tiny_checkpoint, capsys):
    job = load_job("calibrate_k_ranker")
    assert job.main(["--checkpoint", tiny_checkpoint, "--out", str(tmp_path / "out.pt"), "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert "carries no K ranker" in err and "jobs/fit_k_ranker.py" in err
    assert not (tmp_path / "out.pt").exists()
    assert job.main(["--checkpoint", str(tmp_path / "missing.pt"), "--out", str(tmp_path / "out.pt")]) == 1
    assert "error:" in capsys.readouterr().err
