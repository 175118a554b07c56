"""Batch clustering at scale: many tables of mixed sizes through ``run_batch``, against a plain loop of KMeans+.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_batch_scale.py --n-tables 1000 --out docs/results/batch-scale

Generates ``--n-tables`` Gaussian-cluster tables (seeded; N log-uniform in 100..5000 rows, D uniform in 2..64
columns, K uniform in 2..10, centres drawn N(0, 2^2) per coordinate, unit noise), one Parquet file each, and
measures in one run on the same machine:

1. ``run_batch`` (``jobs/cluster.py``'s function) over the folder on a private local Ray with one logical CPU per
   core and the default number of workers (one actor per free CPU, each loading the model once). Per-table seconds
   are the ``seconds`` column of ``summary.csv`` (read + fit, inside the actor); throughput is the tables over the
   wall time of the whole ``run_batch`` call (actor start-up, clustering, writing the outputs, MLflow logging).
2. With ``--cluster ADDRESS``, the same on an existing (e.g. multi-node) Ray cluster.
3. A plain sequential in-process loop of KMeans+ over the same files: read, z-normalise, KMeans for K = 2..10,
   keeping the best silhouette (:func:`pipeline.evaluation.methods.silhouette_select`, the evaluation's setting:
   the full silhouette on every row, no subsampling, which is O(N^2) per K).

The driver's memory: ``ru_maxrss`` (peak RSS of the process so far) after each phase, and its RSS sampled every
0.25 s during the batch together with the number of outputs on disk, so the peak with a quarter of the tables done
can be set against the peak at the end (the outputs are streamed to disk, not held). Writes ``OUT.md`` (summary,
command, checkpoint sha256, machine, date, load average before/after) and ``OUT.csv`` (per-table seconds).
Ray workers run at nice 0 (Ray's default is 15), as in ``bench_batch.py``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from benchmarks.bench_batch import resolve_checkpoint
from pipeline.batch_cluster import ClusterJobConfig, run_batch
from pipeline.evaluation.methods import SILHOUETTE_K_RANGE, silhouette_select
from pipeline.evaluation.report import PROVENANCE_PREFIXES, provenance_lines

ROWS = (100, 5000)
COLUMNS = (2, 64)
CLUSTERS = (2, 10)
SAMPLE_EVERY_S = 0.25
PAGE = os.sysconf("SC_PAGE_SIZE")


def make_mixed_tables(folder: Path, n_tables: int, seed: int, rows: tuple[int, int] = ROWS,
                      columns: tuple[int, int] = COLUMNS, clusters: tuple[int, int] = CLUSTERS) -> pd.DataFrame:
    """Write ``n_tables`` Gaussian-cluster Parquet files (features ``f*`` plus ``label``) into ``folder``.

    N is log-uniform in ``rows``, D and K uniform in ``columns`` and ``clusters`` (inclusive). Returns one row per
    table: ``table``, ``path``, ``rows``, ``columns``, ``k_true``.
    """
    rng = np.random.default_rng(seed)
    meta = []
    for i in range(n_tables):
        n = int(round(np.exp(rng.uniform(np.log(rows[0]), np.log(rows[1])))))
        d = int(rng.integers(columns[0], columns[1] + 1))
        k = int(rng.integers(clusters[0], clusters[1] + 1))
        centres = rng.normal(scale=2.0, size=(k, d))
        y = rng.integers(0, k, n)
        X = centres[y] + rng.normal(size=(n, d))
        name = f"table_{i:04d}"
        path = folder / f"{name}.parquet"
        pd.DataFrame(X, columns=[f"f{j}" for j in range(d)]).assign(label=y).to_parquet(path)
        meta.append({"table": name, "path": str(path), "rows": n, "columns": d, "k_true": k})
    return pd.DataFrame(meta)


def rss_bytes() -> int:
    """The driver's resident set size now (Linux /proc)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE


def peak_rss_bytes() -> int:
    """The driver's peak RSS so far (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def outputs_on_disk(folder: Path) -> Callable[[], int]:
    """A counter of the ``*.parquet`` outputs in ``folder`` (0 while it does not exist)."""

    def count() -> int:
        try:
            return sum(1 for e in os.scandir(folder) if e.name.endswith(".parquet"))
        except FileNotFoundError:
            return 0

    return count


class RssSampler:
    """Samples the driver's RSS and the tables done (``done()``) every ``every`` seconds in a thread."""

    def __init__(self, done: Callable[[], int], every: float = SAMPLE_EVERY_S) -> None:
        self._outputs, self.every = done, every
        self.samples: list[tuple[float, int, int]] = []  # (seconds, rss bytes, tables done)
        self.loads: list[float] = []  # the machine's 1-minute load average at each sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        start = time.perf_counter()
        while True:
            self.samples.append((time.perf_counter() - start, rss_bytes(), self._outputs()))
            self.loads.append(os.getloadavg()[0])
            if self._stop.wait(self.every):
                break

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append((self.samples[-1][0] if self.samples else 0.0, rss_bytes(), self._outputs()))

    @property
    def mean_load(self) -> float:
        """The machine's mean 1-minute load average over the samples (other work included)."""
        return float(np.mean(self.loads)) if self.loads else float("nan")

    def peak(self, up_to_outputs: int | None = None) -> int:
        """Largest sampled RSS, over the samples taken while at most ``up_to_outputs`` tables were done."""
        vals = [r for _, r, n in self.samples if up_to_outputs is None or n <= up_to_outputs]
        return max(vals) if vals else 0


@dataclass
class Measured:
    """One way of clustering the tables: per-table seconds and the run's figures."""

    name: str
    seconds: pd.Series  # per table, indexed by table name
    wall: float
    failed: int
    k: pd.Series
    ari: pd.Series
    extra: dict = field(default_factory=dict)

    @property
    def tables_per_s(self) -> float:
        return len(self.seconds) / self.wall

    def quantile(self, q: float) -> float:
        return float(self.seconds.quantile(q))


def measure_batch(name: str, folder: Path, meta: pd.DataFrame, checkpoint: str, work: Path,
                  num_workers: int | None = None) -> Measured:
    """``run_batch`` over ``folder`` on the Ray already initialised, with the driver's RSS sampled."""
    out_dir = work / f"out_{name.replace(' ', '_')}"
    cfg = ClusterJobConfig(inputs=(str(folder),), output_dir=str(out_dir), label_column="label",
                           checkpoint=checkpoint, num_workers=num_workers,
                           tracking_uri=f"sqlite:///{work}/mlruns.db", experiment=f"scale-{name}", progress=False)
    rss_before = rss_bytes()
    start = time.perf_counter()
    with RssSampler(outputs_on_disk(out_dir)) as sampler:
        summary = run_batch(cfg)
    wall = time.perf_counter() - start
    summary = summary.set_index("table").loc[meta["table"]]
    quarter = len(meta) // 4
    extra = {"workers": summary.attrs.get("num_workers"), "startup_s": summary.attrs.get("startup_seconds"),
             "clustering_s": summary.attrs.get("clustering_seconds"), "rss_before": rss_before,
             "rss_peak_sampled": sampler.peak(), "rss_peak_quarter": sampler.peak(quarter), "quarter": quarter,
             "ru_maxrss_after": peak_rss_bytes(), "samples": len(sampler.samples), "load": sampler.mean_load}
    ok = summary["status"] == "ok"
    return Measured(name, summary["seconds"].astype(float), wall, int((~ok).sum()),
                    summary["n_clusters"], summary["ari"].astype(float), extra)


def kmeans_plus_table(path: str, seed: int = 0) -> tuple[np.ndarray, int]:
    """KMeans+ on one table file: read, z-normalise, :func:`silhouette_select` over K = 2..10 (as bench_batch)."""
    X = pd.read_parquet(path).drop(columns="label").to_numpy(np.float64)
    sd = X.std(0)
    X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
    return silhouette_select("KMeans", X, seed=seed)


def measure_kmeans_loop(meta: pd.DataFrame) -> Measured:
    """A plain sequential loop of KMeans+ over the tables, in this process, timing each table."""
    from sklearn.metrics import adjusted_rand_score

    seconds, ks, aris = {}, {}, {}
    rss_before = rss_bytes()
    start = time.perf_counter()
    with RssSampler(lambda: len(seconds)) as sampler:
        for row in meta.itertuples():
            t0 = time.perf_counter()
            labels, k = kmeans_plus_table(row.path)
            seconds[row.table] = time.perf_counter() - t0
            ks[row.table] = k
            aris[row.table] = adjusted_rand_score(pd.read_parquet(row.path, columns=["label"])["label"], labels)
    wall = time.perf_counter() - start
    idx = list(meta["table"])
    quarter = len(meta) // 4
    return Measured("KMeans+ loop", pd.Series(seconds)[idx], wall, 0, pd.Series(ks)[idx], pd.Series(aris)[idx],
                    {"workers": "1 (in-process)", "rss_before": rss_before, "rss_peak_sampled": sampler.peak(),
                     "rss_peak_quarter": sampler.peak(quarter), "quarter": quarter,
                     "ru_maxrss_after": peak_rss_bytes(), "load": sampler.mean_load})


def _code(text: str) -> str:
    """``text`` as Markdown inline code, with a longer fence when it holds backticks."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _mib(b: float) -> str:
    return f"{b / 2**20:.0f}"


def report(args, given: list[str], meta: pd.DataFrame, results: list[Measured], checkpoint: str, what: str,
           load_before: tuple, load_after: tuple, total_s: float, cluster_note: str | None) -> str:
    """The Markdown results file."""
    by = {m.name: m for m in results}
    local, km = by["TabClustPFN local"], by["KMeans+ loop"]
    lines = [f"# Batch clustering at scale: {len(meta)} tables of mixed sizes", "",
             f"{len(meta)} generated Gaussian-cluster tables (seed {args.seed}): N log-uniform in "
             f"{args.rows[0]}..{args.rows[1]} (median {int(meta['rows'].median())}, total "
             f"{int(meta['rows'].sum()):,} rows), D uniform in {args.columns[0]}..{args.columns[1]}, K uniform in "
             f"{CLUSTERS[0]}..{CLUSTERS[1]}. TabClustPFN: `run_batch` (the job's function; checkpoint: {what}), "
             "per-table seconds from `summary.csv` (read + fit inside the worker), tables/s over the wall time of "
             "the whole `run_batch` call (worker start-up, clustering, writing outputs, MLflow). KMeans+: a plain "
             "sequential loop in the driver process (read, z-normalise, `silhouette_select('KMeans', ...)` for K "
             f"{SILHOUETTE_K_RANGE.start}..{SILHOUETTE_K_RANGE.stop - 1}, the evaluation's setting: the full "
             "silhouette on every row, no subsampling, O(N^2) per K; scikit-learn's default threads).", "",
             "| run | workers | tables | failed | wall s | tables/s | p50 s/table | p95 s/table | mean ARI | "
             "driver peak RSS MiB (sampled) | mean load average |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in results:
        rss = m.extra.get("rss_peak_sampled") or m.extra.get("ru_maxrss_after")
        lines.append(f"| {m.name} | {m.extra.get('workers')} | {len(m.seconds)} | {m.failed} | {m.wall:.1f} | "
                     f"{m.tables_per_s:.3f} | {m.quantile(0.5):.3f} | {m.quantile(0.95):.3f} | "
                     f"{m.ari.mean():.3f} | {_mib(rss)} | {m.extra.get('load', float('nan')):.1f} |")
    lines += ["", f"TabClustPFN batch / KMeans+ loop, tables/s: **{local.tables_per_s / km.tables_per_s:.2f}x**; "
              f"p50 seconds per table, TabClustPFN / KMeans+: **{local.quantile(0.5) / km.quantile(0.5):.2f}x** "
              f"(p95: {local.quantile(0.95) / km.quantile(0.95):.2f}x).", ""]
    if "TabClustPFN cluster" in by:
        c = by["TabClustPFN cluster"]
        lines += [f"On the cluster at `{args.cluster}`: {c.tables_per_s:.3f} tables/s with {c.extra['workers']} "
                  f"workers, {c.tables_per_s / local.tables_per_s:.2f}x the local run. {cluster_note or ''}", ""]
    else:
        lines += [f"Cluster run: {cluster_note or 'not measured (no --cluster given).'}", ""]
    lines += ["## Driver memory", "",
              "The driver's resident memory (RSS of the Python process that runs `run_batch` and then the KMeans+ "
              "loop; the Ray workers and Ray's own daemons are separate processes), sampled every "
              f"{SAMPLE_EVERY_S} s with the number of tables done (for `run_batch`: outputs already on disk):", "",
              "| run | RSS before MiB | peak with <= 1/4 of tables done MiB | peak over the run MiB | "
              "ru_maxrss after MiB |", "|---|---|---|---|---|"]
    for m in results:
        if "rss_peak_sampled" in m.extra:
            e = m.extra
            lines.append(f"| {m.name} | {_mib(e['rss_before'])} | {_mib(e['rss_peak_quarter'])} "
                         f"(<= {e['quarter']} tables) | {_mib(e['rss_peak_sampled'])} | "
                         f"{_mib(e['ru_maxrss_after'])} |")
    growth = local.extra["rss_peak_sampled"] - local.extra["rss_peak_quarter"]
    lines += ["", f"Local run: the peak over all {len(meta)} tables is {_mib(growth)} MiB above the peak with a "
              f"quarter of them done ({growth / 2**20 / max(1, len(meta) - local.extra['quarter']) * 1024:.1f} KiB "
              "per further table): the outputs are streamed to disk, not held. `ru_maxrss` is the process's peak "
              "since it started (table generation, checkpoint check, the batch runs and, for the loop, the loop).", "",
              "## Timing detail", "",
              f"Local run: worker start-up {local.extra['startup_s']:.1f} s (model loaded once per worker), "
              f"clustering phase {local.extra['clustering_s']:.1f} s "
              f"({len(meta) / local.extra['clustering_s']:.3f} tables/s). Per-table seconds for both, with N, D, "
              f"K and the K found, in `{Path(args.out).name}.csv`. Seconds per table by size (p50, TabClustPFN / "
              "KMeans+):", "", "| N | tables | TabClustPFN p50 s | KMeans+ p50 s |", "|---|---|---|---|"]
    bins = pd.cut(meta["rows"], [0, 300, 1000, 3000, 10**9], labels=["100-300", "300-1000", "1000-3000", "3000-5000"])
    for b, idx in meta.groupby(bins, observed=True).groups.items():
        names = meta.loc[idx, "table"]
        lines.append(f"| {b} | {len(names)} | {local.seconds[names].median():.3f} | "
                     f"{km.seconds[names].median():.3f} |")
    lines += ["", f"Run time of the benchmark: {total_s / 60:.1f} min. Load average (1/5/15 min) before: "
              f"{' / '.join(f'{x:.2f}' for x in load_before)}; after: {' / '.join(f'{x:.2f}' for x in load_after)} "
              f"({os.cpu_count()} CPUs, shared with other work); the table's last column is the 1-minute load "
              f"average averaged over each run (sampled every {SAMPLE_EVERY_S} s): above {os.cpu_count()}, the run "
              "shared the cores with other work and its figures are slower than on an idle machine.", "",
              PROVENANCE_PREFIXES["command"] + _code("PYTHONPATH=. python benchmarks/bench_batch_scale.py "
                                                     + shlex.join(given)), "",
              *provenance_lines(checkpoint, uses_model=True)]
    return "\n".join(lines) + "\n"


def per_table_frame(meta: pd.DataFrame, results: list[Measured]) -> pd.DataFrame:
    """One row per table: its size and, per run, seconds, K found and ARI."""
    df = meta.drop(columns="path").set_index("table")
    for m in results:
        key = m.name.replace(" ", "_").replace("+", "plus")
        df[f"{key}_seconds"] = m.seconds.round(4)
        df[f"{key}_k"] = m.k
        df[f"{key}_ari"] = m.ari.round(4)
    return df.reset_index()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-tables", type=int, default=1000)
    p.add_argument("--rows", type=int, nargs=2, default=list(ROWS), metavar=("MIN", "MAX"))
    p.add_argument("--columns", type=int, nargs=2, default=list(COLUMNS), metavar=("MIN", "MAX"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint", default=None, help="default: the shipped one (random small weights if none)")
    p.add_argument("--num-workers", type=int, default=None, help="default: one per free CPU (run_batch's default)")
    p.add_argument("--cluster", default=None, help="Ray address of an existing cluster to run the tables on too")
    p.add_argument("--cluster-note", default=None, help="a sentence on the cluster, written beside its figures")
    p.add_argument("--out", default="docs/results/batch-scale", help="writes OUT.md and OUT.csv")
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else list(argv)

    import ray

    from pipeline.ray_env import init_ray

    os.environ.setdefault("RAY_worker_niceness", "0")
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    t_start = time.perf_counter()
    load_before = os.getloadavg()
    results: list[Measured] = []
    with tempfile.TemporaryDirectory(prefix="batchscale") as tmp:
        work = Path(tmp)
        folder = work / "tables"
        folder.mkdir()
        meta = make_mixed_tables(folder, args.n_tables, args.seed, tuple(args.rows), tuple(args.columns))
        checkpoint, what = resolve_checkpoint(args.checkpoint, work)
        print(f"{args.n_tables} tables (N {args.rows[0]}..{args.rows[1]}, D {args.columns[0]}..{args.columns[1]}); "
              f"checkpoint: {what}; load average {load_before[0]:.2f}", flush=True)
        # one logical CPU per core (init_ray would give a small machine 4), so the default is one worker per core
        started = init_ray(address="local", num_cpus=os.cpu_count())
        try:
            results.append(measure_batch("TabClustPFN local", folder, meta, checkpoint, work, args.num_workers))
        finally:
            if started:
                ray.shutdown()
        print(f"  TabClustPFN local: {results[-1].wall:.1f} s", flush=True)
        cluster_note = args.cluster_note
        if args.cluster:
            init_ray(address=args.cluster)
            try:
                nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
                cpus = ray.cluster_resources().get("CPU", 0)
                results.append(measure_batch("TabClustPFN cluster", folder, meta, checkpoint, work,
                                             args.num_workers))
            finally:
                ray.shutdown()
            cluster_note = f"{nodes} nodes, {cpus:g} CPUs. " + (cluster_note or "")
            print(f"  TabClustPFN cluster: {results[-1].wall:.1f} s", flush=True)
        results.append(measure_kmeans_loop(meta))
        print(f"  KMeans+ loop: {results[-1].wall:.1f} s", flush=True)
        load_after = os.getloadavg()
        text = report(args, given, meta, results, checkpoint, what, load_before, load_after,
                      time.perf_counter() - t_start, cluster_note)
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        per_table_frame(meta, results).to_csv(args.out + ".csv", index=False)
        with open(args.out + ".md", "w") as fh:
            fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
