"""Refitting CIN to a frozen PIN, on the fingerprints the network sees at inference.

CIN's loss is decoupled from PIN's (it trains on detached partitions), so the two can be fitted apart. During
pretraining CIN chases a PIN that keeps changing, on small tables (N 100-200) and one column ordering; at
inference it sees the final PIN, tables of up to 1,000 context rows and several orderings whose posteriors are
averaged. A refit closes that gap cheaply: the network runs forward only, once per prior table, and the small MLP
is then trained for many epochs on the stored fingerprints.

For each prior table, :func:`task_record` keeps what the refit and its evaluation need and nothing else:

* ``fingerprints`` (M, F): CIN's input for each of the M column orderings (:mod:`model.ensemble`);
* ``cross`` (C, M, C): ARI between the combined partition at each candidate K and member j's partition at each K,
  so that :func:`select_from_records` replays the ``expected_ari`` rule (:mod:`model.selection`) for any new
  posterior without running the network again;
* ``ari_k`` (C,): ARI of the combined partition at each K against the true labels.

Tables with fewer columns than M orderings have fewer distinct members m; their members are repeated cyclically up
to M, and ``n_members`` keeps m, so that every average (posterior, expected ARI, loss) weighs each distinct member
1/m as the estimator does, also where m does not divide M (:func:`member_weights`).
"""

from __future__ import annotations

import copy
import dataclasses
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import adjusted_rand_score

from model.cin import CIN, gram_fingerprint
from model.ensemble import combine_members, infer_members
from model.selection import cross_ari

#: Arrays of a :class:`CardinalityRecords`, in the order of its fields.
RECORD_FIELDS = ("fingerprints", "n_clusters", "cross", "ari_k", "is_gmm", "seeds", "n_members")


@dataclasses.dataclass
class CardinalityRecords:
    """What the refit keeps of T prior tables (module docstring): ``fingerprints`` (T, M, F) float32,
    ``n_clusters`` (T,) true K, ``cross`` (T, C, M, C), ``ari_k`` (T, C), ``is_gmm`` (T,) bool, ``seeds`` (T,),
    ``n_members`` (T,) distinct members m <= M of each table (default: M, every member distinct)."""

    fingerprints: np.ndarray
    n_clusters: np.ndarray
    cross: np.ndarray
    ari_k: np.ndarray
    is_gmm: np.ndarray
    seeds: np.ndarray
    n_members: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.n_members is None:
            self.n_members = np.full(len(self.n_clusters), self.fingerprints.shape[1], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.n_clusters)

    def subset(self, index: np.ndarray) -> "CardinalityRecords":
        return CardinalityRecords(*(getattr(self, f)[index] for f in RECORD_FIELDS))

    @classmethod
    def concat(cls, parts: Sequence["CardinalityRecords"]) -> "CardinalityRecords":
        if not parts:
            raise ValueError("no records to concatenate")
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in RECORD_FIELDS))

    def save(self, path: str | Path) -> None:
        """Write atomically (a temporary file renamed over ``path``): an interrupted run leaves no partial file."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp")
        with open(tmp, "wb") as fh:
            np.savez(fh, **{f: getattr(self, f) for f in RECORD_FIELDS})
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path) -> "CardinalityRecords":
        with np.load(path, allow_pickle=False) as z:
            missing = [f for f in RECORD_FIELDS if f not in z.files and f != "n_members"]
            if missing:
                raise ValueError(f"{path} is not a CIN record file: it lacks {missing}")
            fields = {f: z[f] for f in RECORD_FIELDS if f in z.files}
        if "n_members" not in fields:  # written before n_members was kept: the period of the repeated members
            fields["n_members"] = _repeat_period(fields["fingerprints"], fields["cross"])
        return cls(**fields)


def _repeat_period(fingerprints: np.ndarray, cross: np.ndarray) -> np.ndarray:
    """(T,) the shortest period of each table's cyclically repeated members (M where none repeats)."""
    t, m = fingerprints.shape[:2]
    out = np.full(t, m, dtype=np.int64)
    for p in range(m - 1, 0, -1):  # downwards: the shortest period found last wins
        cyc = np.arange(m) % p
        same = (fingerprints == fingerprints[:, cyc]).all((1, 2)) & (cross == cross[:, :, cyc]).all((1, 2, 3))
        out[same] = p
    return out


def member_weights(records: CardinalityRecords) -> np.ndarray:
    """(T, M) the weight of each stored member in a table's averages, summing to 1: 1/m for each of its m distinct
    members, split evenly over that member's cyclic repeats (1/M everywhere when m divides M)."""
    slots = records.fingerprints.shape[1]
    m = np.asarray(records.n_members, dtype=np.int64)[:, None]
    if (m < 1).any() or (m > slots).any():
        raise ValueError(f"n_members must be in 1..{slots} (the stored members), got {np.unique(m).tolist()}")
    repeats = (slots - 1 - np.arange(slots)[None] % m) // m + 1  # slots j < M holding the same member as j
    return 1.0 / (m * repeats)


@torch.no_grad()
def task_record(net: torch.nn.Module, X: np.ndarray, categorical: Sequence[int], y: np.ndarray,
                n_estimators: int) -> dict[str, np.ndarray]:
    """One table's record, inferred as ``TabClustPFN(n_estimators=...)`` infers a context (all rows are context).

    Parameters
    ----------
    net : TabClustNet in eval mode, on the CPU.
    X : (N, D) the table as the prior draws it (continuous columns z-normalised, categorical columns codes).
    categorical : indices of the categorical columns.
    y : (N,) true labels.
    n_estimators : column orderings M.
    """
    member_probs, posteriors = infer_members(net, X, categorical, n_estimators)
    m, n = member_probs.shape[0], member_probs.shape[2]
    # the float32 partitions CIN read (the float64 copies hold them exactly)
    fingerprints = gram_fingerprint(torch.as_tensor(member_probs, dtype=torch.float32),
                                    torch.ones(m, n, dtype=torch.bool)).float().numpy()
    probs, _, _ = combine_members(member_probs, posteriors)
    labels = probs.argmax(-1)  # (C, N)
    c = labels.shape[0]
    cross = cross_ari(labels, member_probs.argmax(-1).reshape(m * c, n)).reshape(c, m, c)
    cyc = np.arange(n_estimators) % m  # fewer columns than orderings: repeat the members
    return {"fingerprints": fingerprints[cyc], "cross": cross[:, cyc], "posteriors": posteriors[cyc],
            "ari_k": np.array([adjusted_rand_score(y, lab) for lab in labels]), "n_members": m}


def collect_records(net: torch.nn.Module, tasks: Sequence, n_estimators: int) -> CardinalityRecords:
    """Records of prior draws (``priors.PriorDataset``: ``X``, ``y``, ``categorical``, ``n_clusters``, ``meta``)."""
    net.eval()
    recs = [task_record(net, t.X, t.categorical, t.y, n_estimators) for t in tasks]
    return CardinalityRecords(
        fingerprints=np.stack([r["fingerprints"] for r in recs]).astype(np.float32),
        n_clusters=np.array([int(t.n_clusters) for t in tasks], dtype=np.int64),
        cross=np.stack([r["cross"] for r in recs]),
        ari_k=np.stack([r["ari_k"] for r in recs]),
        is_gmm=np.array([t.meta.get("mechanism") == "gmm" for t in tasks]),
        seeds=np.array([int(t.meta.get("seed", -1)) for t in tasks], dtype=np.int64),
        n_members=np.array([r["n_members"] for r in recs], dtype=np.int64))


@torch.no_grad()
def member_posteriors(cin: CIN, fingerprints: np.ndarray) -> np.ndarray:
    """(T, M, F) fingerprints -> (T, M, C) each member's p(K | X)."""
    t, m, f = fingerprints.shape
    logits, _ = cin(torch.as_tensor(fingerprints, dtype=torch.float32).reshape(t * m, f))
    return torch.softmax(logits.double(), dim=-1).reshape(t, m, -1).numpy()


def select_from_records(records: CardinalityRecords, posteriors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``expected_ari`` rule with members (:func:`model.selection.select_k`, every K admissible) replayed
    from the records under ``posteriors`` (T, M, C) -> (ARI of the chosen partition (T,), chosen K (T,))."""
    w = posteriors / np.maximum(posteriors.sum(-1, keepdims=True), 1e-300)
    scores = np.einsum("timk,tmk,tm->ti", records.cross, w, member_weights(records))
    # the smallest K among scores within 1e-12 of the best, as select_k (sums in another order differ by ~1e-16)
    chosen = (scores >= scores.max(-1, keepdims=True) - 1e-12).argmax(-1)
    return records.ari_k[np.arange(len(chosen)), chosen], chosen + 2


def summarize(records: CardinalityRecords, posteriors: np.ndarray) -> dict[str, float]:
    """Cross-entropy and accuracy of the members' averaged posterior on the true K, and the ARI and K error of
    the ``expected_ari`` choice (medians and means over the tables)."""
    avg = np.einsum("tm,tmc->tc", member_weights(records), posteriors)
    idx = np.arange(len(records))
    truth = records.n_clusters - 2
    ari, k = select_from_records(records, posteriors)
    return {"cross_entropy": float(-np.log(np.maximum(avg[idx, truth], 1e-300)).mean()),
            "k_accuracy": float((avg.argmax(-1) == truth).mean()),
            "ari_median": float(np.median(ari)), "ari_mean": float(ari.mean()),
            "k_mae": float(np.abs(k - records.n_clusters).mean()),
            "ari_true_k_mean": float(records.ari_k[idx, truth].mean())}


def fit_cin(cin: CIN, records: CardinalityRecords, *, epochs: int, lr: float, batch_size: int = 256,
            weight_decay: float = 0.01, seed: int = 0, validation: CardinalityRecords | None = None
            ) -> tuple[CIN, list[dict[str, float]]]:
    """Train a copy of ``cin`` on every member's fingerprint with the cross-entropy on the true K (the paper's
    CIN loss), AdamW at a constant ``lr``. Returns the copy after the epoch whose ``validation`` cross-entropy
    was lowest (the last epoch without ``validation``) and the per-epoch history."""
    if epochs < 1 or lr <= 0 or batch_size < 1:
        raise ValueError(f"epochs and batch_size must be >= 1 and lr > 0, got {epochs}, {batch_size}, {lr}")
    if getattr(cin, "ordinal", False):
        raise ValueError("refitting supports the categorical CIN head only (cin_head='categorical')")
    for name, recs in (("records", records), ("validation", validation)):
        if recs is not None and not 2 <= recs.n_clusters.min() <= recs.n_clusters.max() <= recs.ari_k.shape[1] + 1:
            raise ValueError(f"{name} hold tables with K = {recs.n_clusters.min()}..{recs.n_clusters.max()}, but "
                             f"CIN's candidates are K = 2..{recs.ari_k.shape[1] + 1}: draw the prior's K within "
                             "the network's k_max")
    gen = torch.Generator().manual_seed(seed)
    model = copy.deepcopy(cin).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    t, m, f = records.fingerprints.shape
    x = torch.as_tensor(records.fingerprints, dtype=torch.float32).reshape(t * m, f)
    y = torch.as_tensor(np.repeat(records.n_clusters - 2, m), dtype=torch.long)
    # every table weighs M rows, each distinct member the same share of them (1 everywhere when m divides M)
    weight = torch.as_tensor(member_weights(records).reshape(t * m) * m, dtype=torch.float32)
    history: list[dict[str, float]] = []
    best, best_ce = copy.deepcopy(model), float("inf")
    for epoch in range(epochs):
        total = 0.0
        for idx in torch.randperm(len(y), generator=gen).split(batch_size):
            loss = (F.cross_entropy(model(x[idx])[0], y[idx], reduction="none") * weight[idx]).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        row = {"epoch": epoch + 1, "train_cross_entropy": total / len(y)}
        model.eval()
        if validation is not None:
            row.update({f"val_{k}": v for k, v in
                        summarize(validation, member_posteriors(model, validation.fingerprints)).items()})
            if row["val_cross_entropy"] < best_ce:
                best, best_ce = copy.deepcopy(model), row["val_cross_entropy"]
        model.train()
        history.append(row)
    final = best if validation is not None else model
    return final.eval(), history
