"""benchmarks/bench_inference.py: the note on the peer's BLAS kernel, which decides how fast the KMeans sweep is."""

from __future__ import annotations

from threadpoolctl import threadpool_info

from benchmarks.bench_inference import blas_note

POOLS = [{"user_api": "blas", "internal_api": "openblas", "version": "0.3.31", "architecture": "SkylakeX"},
         {"user_api": "openmp", "internal_api": "openmp", "version": None, "architecture": None}]


def test_the_note_names_the_peer_s_blas_kernel_and_leaves_out_other_pools():
    note = blas_note({}, POOLS)
    assert note == "peer's BLAS: openblas 0.3.31 (SkylakeX kernel)"


def test_a_forced_openblas_kernel_is_warned_about_with_the_fair_command():
    note = blas_note({"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512", "OTHER": "x"}, POOLS)
    first, warning = note.splitlines()
    assert first.startswith("peer's BLAS: openblas")
    assert "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512" in warning and "flatters" in warning
    assert "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE" in warning


def test_the_live_process_reports_the_blas_that_numpy_loaded():
    import numpy  # noqa: F401  (loads its BLAS into the process)

    assert "none found" not in blas_note({}, threadpool_info())


def test_the_one_thread_sweep_picks_the_same_k_and_gives_the_thread_pools_back():
    from benchmarks.bench_inference import data, kmeans_sweep, kmeans_sweep_one_thread

    X = data(200, d=4, k=3)
    before = [(p["internal_api"], p["num_threads"]) for p in threadpool_info()]
    assert kmeans_sweep_one_thread(X, 0) == kmeans_sweep(X, 0)
    assert [(p["internal_api"], p["num_threads"]) for p in threadpool_info()] == before
