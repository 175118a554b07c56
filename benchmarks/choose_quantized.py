"""Whether the network's linear layers run in int8 (dynamic quantisation) by default, judged for cost on
development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_quantized.py --out docs/results/choice-quantized

A default fit on a table of more than 4 design columns spends most of its time in the network's forward passes
(``docs/results/bench-stages.md``), which is why TabClustPFN is slower than the KMeans + silhouette sweep. PyTorch's
dynamic quantisation (``torch.ao.quantization.quantize_dynamic``) stores each ``nn.Linear``'s weights as int8 and
quantises its inputs on the fly, a CPU speed-up that needs no retraining; attention's own products stay float32.
Each table of the development sets (the synthetic sets of ``benchmarks/choose_checkpoint.py`` and ``dev``) is
clustered by ``TabClustPFN(random_state=0)`` with every setting at its default, K inferred, by the float32
network (the baseline) and by its quantised copy, in one process per worker with one torch thread (as
``jobs/evaluate.py`` runs a method). Per set, table by table: paired mean ARI difference +- standard error, tables
better / worse, mean |K^ - K|, and each variant's median seconds per table. The protocol's rule for a choice made
for cost (docs/DESIGN.md): a cheaper setting qualifies when it loses beyond one standard error on no set. Writes
``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

BASELINE = "float32"
VARIANTS = ("float32", "int8")
SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "coarse": 200, "dev": 23}


def quantized(net):
    """A copy of ``net`` whose ``nn.Linear`` layers hold int8 weights (dynamic quantisation); ``net`` is kept."""
    import copy
    import warnings

    import torch

    with warnings.catch_warnings():  # torch.ao.quantization is deprecated for torchao, which is not installed here
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(copy.deepcopy(net), {torch.nn.Linear}, dtype=torch.qint8)


def estimator_for(variant: str, checkpoint: str):
    """``TabClustPFN(checkpoint=, random_state=0)``; for ``"int8"`` one that runs the quantised network."""
    from model.estimator import TabClustPFN

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    if variant == BASELINE:
        return TabClustPFN(checkpoint=checkpoint, random_state=0)

    class QuantizedTabClustPFN(TabClustPFN):
        def _network(self, path, device):
            net, sha = super()._network(path, device)
            cache = self.__dict__.setdefault("_quantized", {})
            if sha not in cache:
                cache.clear()
                cache[sha] = quantized(net)
            return cache[sha], sha

    return QuantizedTabClustPFN(checkpoint=checkpoint, random_state=0)


def _work(args: tuple) -> list[dict]:
    from benchmarks.choose_k_rule import fit_each

    return fit_each(estimator_for, VARIANTS, *args)


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import cost_choice

    cost_choice(_work, __doc__, argv, out="docs/results/choice-quantized", variants=VARIANTS, baseline=BASELINE,
                setting="network", subset=lambda df: ("tables of > 4 columns", df["columns"] > 4),
                unit=lambda v: f"`{v}`", title="The network's linear layers in int8", column="network",
                what="network", script="choose_quantized.py", sizes=SIZES)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
