"""How much cluster structure survives each stage of a checkpoint, on held-out prior tasks (a diagnostic).

For every task, k-means with the true K runs on: the raw values (the peer), the encoder's row representation R,
the rows the decoder's cosine head scores (R_L: R after the decoder's data<-prototype blocks, R itself without
them), and the network's own known-K partition. If k-means on R falls far below k-means on the raw values, the
encoder throws the rows' geometry away and no decoder can recover it; if R keeps it but R_L does not, the
decoder's row updates overwrite it; if R_L keeps it but the partition does not, the prototypes are what fail.
This is how the encoder bottleneck fixed by ``ModelConfig.value_skip`` was found, and the decoder's loss of wide
tables' clusters that ``ModelConfig.row_updates=False`` addresses.

    PYTHONPATH=. .venv/bin/python benchmarks/probe_representation.py [--checkpoint PATH ...] [--tasks 24]
    PYTHONPATH=. .venv/bin/python benchmarks/probe_representation.py --by-d 4 16 32 64 --tasks 12   # wide tables

``--by-d`` probes GMM tasks of N = 300 rows and exactly D features for each D given (the tasks of
``size_generalization.py``) instead of the validation prior, to see at which stage wide tables lose their clusters.

Prints median ARIs and the ratio of each to the raw-value peer. A ``random:<preset>`` checkpoint name probes an
untrained network of that preset.
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import numpy as np
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from model import ModelConfig, TabClustNet
from model.batching import collate, to_torch
from model.checkpoint import load_checkpoint
from pipeline.config import train_preset
from pipeline.validation import make_validation_tasks


def _load(name: str) -> TabClustNet:
    if name.startswith("random:"):
        torch.manual_seed(0)
        return TabClustNet(ModelConfig.preset(name.split(":", 1)[1]))
    return load_checkpoint(name)[0]


def table_stages(net: TabClustNet, X: np.ndarray, cat_mask: np.ndarray, n_clusters: int) -> dict[str, np.ndarray]:
    """One table's rows at each stage of ``net`` (eval mode, no gradients).

    ``X`` (N, D) is the table as the network reads it (a prior draw, or ``TablePreprocessor``'s output),
    ``cat_mask`` (D,) its categorical columns, ``n_clusters`` the K of the known-K partition. Returns
    ``R`` (N, d), the encoder's row representations; ``R_L`` (N, d), the rows the decoder's cosine head scores (R
    after the decoder's data<-prototype blocks; R itself without them), ``head`` (N, d), those rows through the
    head's MLP and L2-normalised (the space the cosines are taken in) -- both absent for a decoder without a
    cosine head; and ``logits`` (N, K_max), the known-K partition's logits (-inf beyond K).
    """
    net.eval()
    X = np.asarray(X, np.float32)
    table = SimpleNamespace(X=X, y=np.zeros(len(X), np.int64), n_clusters=int(n_clusters),
                            categorical=np.flatnonzero(np.asarray(cat_mask, bool)))
    b = to_torch(collate([table]), "cpu")
    seen: dict[str, torch.Tensor] = {}
    head = getattr(net.decoder, "head", None)  # the iterative and transformer decoders' CosineHead
    hook = head.register_forward_hook(lambda m, args, out: seen.update(R=args[0])) if head is not None else None
    try:
        with torch.no_grad():
            R = net.encode(b["X"], b["row_mask"], b["col_mask"], b["cat_mask"])
            logits = net.partition_logits(R, b["row_mask"], b["n_clusters"])
            if seen:
                seen["head"] = torch.nn.functional.normalize(head.g(seen["R"]).float(), dim=-1)
    finally:
        if hook is not None:
            hook.remove()
    out = {"R": R[0].float().numpy(), "logits": logits[0].float().numpy()}
    if seen:
        out.update(R_L=seen["R"][0].float().numpy(), head=seen["head"][0].numpy())
    return out


def probe(net: TabClustNet, tasks, seed: int = 0) -> dict[str, float]:
    """Median ARIs over ``tasks``: k-means on raw X, k-means on R, and the network's known-K partition."""
    scores: dict[str, list[float]] = {"kmeans_X": [], "kmeans_R": [], "kmeans_RL": [], "network_known_K": []}
    for task in tasks:
        cat_mask = np.zeros(task.X.shape[1], bool)
        cat_mask[list(task.categorical)] = True
        s = table_stages(net, task.X, cat_mask, task.n_clusters)
        km = lambda Z: KMeans(task.n_clusters, n_init=3, random_state=seed).fit_predict(Z)  # noqa: E731
        scores["kmeans_X"].append(adjusted_rand_score(task.y, km(task.X)))
        scores["kmeans_R"].append(adjusted_rand_score(task.y, km(s["R"])))
        scores["kmeans_RL"].append(adjusted_rand_score(task.y, km(s["R_L"])) if "R_L" in s else float("nan"))
        scores["network_known_K"].append(adjusted_rand_score(task.y, s["logits"].argmax(-1)))
    return {k: float(np.median(v)) for k, v in scores.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", nargs="+", default=["model/weights/tabclustpfn-small.pt", "random:small"])
    p.add_argument("--tasks", type=int, default=24, help="held-out validation-prior tasks (default: %(default)s)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--by-d", type=int, nargs="+", metavar="D", help="GMM tasks of N 300 and exactly D features")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.by_d:
        from size_generalization import tasks_of_size  # a sibling script: benchmarks/ is on sys.path

        groups = {f"D={d}": tasks_of_size(300, d, "gmm", args.tasks) for d in args.by_d}
    else:
        groups = {"": make_validation_tasks(train_preset("small").stream, args.tasks)}
    nets = {name: _load(name) for name in args.checkpoint}
    print(f"{'tasks':6s} {'checkpoint':50s} {'kmeans(X)':>10s} {'kmeans(R)':>10s} {'ratio':>6s} "
          f"{'kmeans(R_L)':>11s} {'ratio':>6s} {'net, K':>8s} {'ratio':>6s}")
    for group, tasks in groups.items():
        for name, net in nets.items():
            s = probe(net, tasks)
            print(f"{group:6s} {name:50s} {s['kmeans_X']:10.3f} {s['kmeans_R']:10.3f} "
                  f"{s['kmeans_R'] / s['kmeans_X']:6.2f} {s['kmeans_RL']:11.3f} {s['kmeans_RL'] / s['kmeans_X']:6.2f} "
                  f"{s['network_known_K']:8.3f} {s['network_known_K'] / s['kmeans_X']:6.2f}", flush=True)


if __name__ == "__main__":
    main()
