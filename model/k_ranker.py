"""A learned choice of K: a small MLP scores each candidate partition from its features (:mod:`model.k_features`).

The network proposes a partition for every K and CIN a posterior over K read from those partitions alone. The
ranker reads, for each candidate K, the posterior and expected ARI together with the candidate's geometry in the
table's own space (silhouette, within-cluster variance and its drop from K - 1, Calinski-Harabasz, cluster sizes,
how far the refinement moved it), and is fitted on prior tables to maximise the ARI of the candidate it picks:
its loss is the expected ARI of a softmax choice over the admissible candidates, the decision's own objective.

Inputs per candidate (``input_width``): the features of its feature set (``model.k_features.FEATURE_SETS``), some
also relative to their best over the table's candidates (``RELATIVE``: log posterior, expected ARI, silhouette, and
in set 2 the mixture's penalised likelihood, in set 3 the orderings' agreement), and K / 10; standardised by the
training set's mean and deviation (buffers of the module, so they travel with its weights) and clipped to
+-``INPUT_CLIP``.

Probabilities over K (:func:`k_probabilities`): a softmax of the scores divided by a temperature fitted on
held-out tables to the labelled K (:func:`fit_temperature`, stored as ``ModelConfig.k_ranker_temperature``). The
scores were fitted to pick a partition, not to say how sure it is; the temperature makes their softmax a
probability that each K is the labelled one. On tables whose continuous columns hold few distinct values (rounded
measurements, levels, counts: what real tables hold and the prior never draws) the same scores are right less
often, so the temperature grows as the table's fraction of distinct values falls (:func:`table_temperature`,
``ModelConfig.k_ranker_temperature_slope``, fitted on real development tables by :func:`fit_temperature_slope`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from model.k_features import FEATURE_SETS, FEATURES

#: Features also given relative to their best over the table's admissible candidates (those of the ranker's set).
RELATIVE = ("log_post", "exp_ari", "silhouette", "mix_bic", "agree")
HIDDEN = 32
#: Standardised inputs are clipped to +-INPUT_CLIP: degenerate tables (a few distinct rows repeated) give
#: within-cluster variances of 0 and Calinski-Harabasz ratios of 1e12, hundreds of deviations past anything the
#: ranker was fitted on (the fitting tables stay within -22..+58, all but 0.01 % within +-30).
INPUT_CLIP = 30.0


def _check_set(feature_set: int) -> tuple[str, ...]:
    if feature_set not in FEATURE_SETS:
        raise ValueError(f"unknown K ranker feature set {feature_set}: this code knows {sorted(FEATURE_SETS)}")
    return FEATURE_SETS[feature_set]


def input_width(feature_set: int = 1) -> int:
    names = _check_set(feature_set)
    return len(names) + sum(r in names for r in RELATIVE) + 1


def ranker_inputs(features: torch.Tensor, admissible: torch.Tensor, feature_set: int = 1) -> torch.Tensor:
    """features (B, C, len(FEATURES)) for K = 2..C+1 (any value where not admissible), admissible (B, C) bool ->
    (B, C, input_width(feature_set)): the set's features, its relative ones and K / 10."""
    names = _check_set(feature_set)
    if features.shape[-1] != len(FEATURES):
        raise ValueError(f"features must have the {len(FEATURES)} columns of model.k_features.FEATURES, got "
                         f"{features.shape[-1]}")
    feats = torch.where(admissible[..., None], features, torch.zeros_like(features))
    rel = []
    for name in (r for r in RELATIVE if r in names):
        col = feats[..., FEATURES.index(name)]
        best = col.masked_fill(~admissible, -torch.inf).amax(-1, keepdim=True)
        rel.append(torch.where(admissible, col - best, torch.zeros_like(col)))
    ks = torch.arange(2, features.shape[1] + 2, dtype=feats.dtype, device=feats.device) / 10.0
    own = feats[..., [FEATURES.index(name) for name in names]]
    return torch.cat([own, torch.stack(rel, -1), ks.expand(features.shape[:2])[..., None]], -1)


class KRanker(nn.Module):
    """Scores (B, C) of candidates K = 2..C+1 from their features (all of ``FEATURES``; it reads those of its
    ``feature_set``); -inf where not admissible."""

    def __init__(self, feature_set: int = 1) -> None:
        super().__init__()
        w = input_width(feature_set)
        self.feature_set = feature_set
        self.register_buffer("mean", torch.zeros(w))
        self.register_buffer("std", torch.ones(w))
        self.mlp = nn.Sequential(nn.Linear(w, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, HIDDEN), nn.GELU(),
                                 nn.Linear(HIDDEN, 1))

    def forward(self, features: torch.Tensor, admissible: torch.Tensor) -> torch.Tensor:
        x = (ranker_inputs(features, admissible, self.feature_set) - self.mean) / self.std
        x = x.clamp(-INPUT_CLIP, INPUT_CLIP)
        return self.mlp(x).squeeze(-1).masked_fill(~admissible, -torch.inf)

    def choose(self, features: np.ndarray) -> tuple[int, np.ndarray]:
        """One table's features (C, len(FEATURES)) of its admissible candidates K = 2..C+1 -> (chosen K, scores
        (C,))."""
        with torch.no_grad():
            f = torch.as_tensor(np.asarray(features, dtype=np.float32), device=self.mean.device)[None]
            admissible = torch.ones(f.shape[:2], dtype=torch.bool, device=f.device)
            scores = self(f, admissible)[0].double().cpu().numpy()
        return int(np.argmax(scores)) + 2, scores


def fit_ranker(features: np.ndarray, ari: np.ndarray, epochs: int = 1500, lr: float = 3e-3,
               weight_decay: float = 1e-4, seed: int = 0, log_every: int = 0,
               feature_set: int = 1) -> KRanker:
    """Fit a :class:`KRanker` of ``feature_set`` on T tables: ``features`` (T, C, len(FEATURES)) and each
    candidate's ``ari`` (T, C) against the labels, NaN where a candidate is not admissible.
    Full-batch Adam on the expected ARI of a softmax choice."""
    torch.manual_seed(seed)
    f = torch.as_tensor(np.nan_to_num(features, nan=0.0), dtype=torch.float32)
    admissible = torch.as_tensor(~np.isnan(ari))
    target = torch.as_tensor(np.nan_to_num(ari, nan=0.0), dtype=torch.float32)
    ranker = KRanker(feature_set)
    x = ranker_inputs(f, admissible, feature_set)[admissible]
    ranker.mean.copy_(x.mean(0))
    ranker.std.copy_(x.std(0).clamp(min=1e-6))
    opt = torch.optim.AdamW(ranker.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    for epoch in range(epochs):
        scores = ranker(f, admissible)
        loss = -(torch.softmax(scores, -1) * target).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if log_every and epoch % log_every == 0:
            print(f"epoch {epoch}: expected ARI {-loss.item():.4f}", flush=True)
    return ranker.eval()


def record_scores(ranker: KRanker, features: np.ndarray, ari: np.ndarray) -> np.ndarray:
    """The ranker's scores (T, C) of T tables' candidates (records as :func:`fit_ranker`'s), -inf where not
    admissible (a NaN ``ari``)."""
    with torch.no_grad():
        f = torch.as_tensor(np.nan_to_num(features, nan=0.0), dtype=torch.float32)
        return ranker(f, torch.as_tensor(~np.isnan(ari))).double().numpy()


def chosen_ari(ranker: KRanker, features: np.ndarray, ari: np.ndarray) -> np.ndarray:
    """The ARI of the candidate the ranker picks on each of T tables (records as :func:`fit_ranker`'s)."""
    return ari[np.arange(len(ari)), record_scores(ranker, features, ari).argmax(-1)]


def k_probabilities(scores: np.ndarray, temperature: float) -> np.ndarray:
    """Scores (..., C) of candidates K = 2..C+1 (-inf where not admissible) -> probabilities (..., C) that each K is
    the labelled one: a softmax of ``scores / temperature``; the argmax stays the ranker's choice."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 (a calibrated ranker), got {temperature}")
    z = np.asarray(scores, np.float64) / temperature
    z = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)  # exp(-inf) = 0 where not admissible
    return e / e.sum(-1, keepdims=True)


def distinct_fraction(Z: np.ndarray, cat_mask: np.ndarray) -> float:
    """The mean, over the continuous columns of a preprocessed table ``Z`` (N, D), of the fraction of its N values
    that are distinct: 1 for measurements drawn from a density (as the prior draws them), lower for rounded ones,
    levels and counts; 1 for a table without continuous columns."""
    Z = np.asarray(Z)
    continuous = np.flatnonzero(~np.asarray(cat_mask, bool))
    if len(continuous) == 0 or len(Z) == 0:
        return 1.0
    return float(np.mean([len(np.unique(Z[:, j])) / len(Z) for j in continuous]))


def table_temperature(temperature: float, slope: float, distinct: float) -> float:
    """The temperature of one table's probabilities over K: ``temperature * exp(slope * (1 - distinct))``, with
    ``distinct`` its :func:`distinct_fraction` (``slope`` 0: one temperature for every table)."""
    return float(temperature * np.exp(slope * (1.0 - distinct)))


def labelled_candidates(scores: np.ndarray, k_true: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows whose labelled K is among their admissible candidates, its candidate index per row)."""
    idx = np.asarray(k_true, np.int64) - 2
    ok = (idx >= 0) & (idx < scores.shape[1])
    ok[ok] = np.isfinite(scores[np.flatnonzero(ok), idx[ok]])
    if not ok.any():
        raise ValueError("no table whose labelled K is among its admissible candidates: nothing to fit")
    return ok, idx


def fit_temperature(scores: np.ndarray, k_true: np.ndarray) -> float:
    """The temperature that maximises the likelihood of the labelled K of T tables under :func:`k_probabilities`:
    ``scores`` (T, C) of candidates K = 2..C+1, ``k_true`` (T,); tables whose labelled K is not admissible (K = 1,
    K > C + 1, or a -inf score) are left out."""
    from scipy.optimize import minimize_scalar

    scores = np.asarray(scores, np.float64)
    ok, idx = labelled_candidates(scores, k_true)
    s, idx = scores[ok], idx[ok]

    def nll(log_t: float) -> float:
        p = k_probabilities(s, float(np.exp(log_t)))
        return float(-np.log(np.clip(p[np.arange(len(p)), idx], 1e-300, 1.0)).mean())

    return float(np.exp(minimize_scalar(nll, bounds=(-6.0, 8.0), method="bounded").x))


#: the largest slope :func:`fit_temperature_slope` considers (exp(10) flattens any table with distinct values < 0.7)
MAX_SLOPE = 10.0


def fit_temperature_slope(scores: np.ndarray, k_true: np.ndarray, distinct: np.ndarray, temperature: float) -> float:
    """The slope in 0..MAX_SLOPE of :func:`table_temperature` that maximises the likelihood of the labelled K of T
    tables, ``temperature`` fixed: ``scores`` (T, C), ``k_true`` (T,), ``distinct`` (T,) each table's
    :func:`distinct_fraction`; tables whose labelled K is not admissible are left out."""
    from scipy.optimize import minimize_scalar

    scores = np.asarray(scores, np.float64)
    ok, idx = labelled_candidates(scores, k_true)
    s, idx, dist = scores[ok], idx[ok], np.asarray(distinct, np.float64)[ok]

    def nll(slope: float) -> float:
        t = temperature * np.exp(slope * (1.0 - dist))[:, None]
        p = k_probabilities(s / t, 1.0)
        return float(-np.log(np.clip(p[np.arange(len(p)), idx], 1e-300, 1.0)).mean())

    return float(minimize_scalar(nll, bounds=(0.0, MAX_SLOPE), method="bounded").x)


def top_choice_ece(confidence: np.ndarray, right: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error of T top choices: ``confidence`` (T,) the probability each gave its choice,
    ``right`` (T,) whether it was right; ``bins`` equal-width bins of the confidence, each weighted by its share."""
    confidence = np.asarray(confidence, np.float64)
    right = np.asarray(right, bool)
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    return float(sum(abs(right[which == b].mean() - confidence[which == b].mean()) * (which == b).mean()
                     for b in range(bins) if (which == b).any()))


def reliability(probs: np.ndarray, k_true: np.ndarray, level: float = 0.8, bins: int = 10) -> dict[str, float]:
    """How far probabilities over K = 2..C+1 (T, C) can be trusted on T tables with labelled ``k_true``: how often
    the most probable K is the labelled one against its mean probability, the expected calibration error of that
    top choice (``bins`` equal-width bins), and how often the smallest set of K holding ``level`` of the
    probability contains the labelled K (``set_covered``), with its mean size (``set_size``)."""
    probs = np.asarray(probs, np.float64)
    idx = np.asarray(k_true, np.int64) - 2
    top = probs.argmax(1)
    conf = probs[np.arange(len(probs)), top]
    right = top == idx
    ece = top_choice_ece(conf, right, bins)
    order = np.argsort(-probs, 1, kind="stable")
    size = (np.cumsum(np.take_along_axis(probs, order, 1), 1) < level - 1e-12).sum(1) + 1
    covered = np.array([i in order[t, : size[t]] for t, i in enumerate(idx)])
    return {"tables": int(len(idx)), "top_right": float(right.mean()), "top_probability": float(conf.mean()),
            "ece": float(ece), "set_covered": float(covered.mean()), "set_size": float(size.mean())}
