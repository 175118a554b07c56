"""Data that lives beside the clone, not in it: the 22 UCI tables of the real suite (``../shared/benchmarks``)."""

from __future__ import annotations

import pytest

from pipeline.evaluation.suites import benchmarks_dir

#: For tests that read the real suite: skipped on a clone without the shared benchmark folder beside it.
needs_real_suite = pytest.mark.skipif(not (benchmarks_dir() / "real").is_dir(),
                                      reason="shared benchmarks not present (../shared/benchmarks/real)")

#: For tests that read the development suite (``../shared/benchmarks/dev``) or the OpenML test suite.
needs_dev_suite = pytest.mark.skipif(not (benchmarks_dir() / "dev").is_dir(),
                                     reason="shared benchmarks not present (../shared/benchmarks/dev)")
needs_openml_suite = pytest.mark.skipif(not (benchmarks_dir() / "openml").is_dir(),
                                        reason="shared benchmarks not present (../shared/benchmarks/openml)")
