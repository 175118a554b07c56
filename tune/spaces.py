"""Search spaces of the ablation studies (paper Sec. 5 and its ablation appendix) as plain data.

A study maps dotted ``TrainConfig`` keys (the keys :func:`pipeline.config.apply_overrides` takes) to a domain:
:class:`Grid` (every value is a trial), :class:`Choice` or :class:`LogUniform` (random search). The spaces of
``hparams`` scale with the base config and the step budget (warm-up lengths, model widths that fit the heads).
:func:`to_tune` turns a space into Ray Tune domains; nothing here imports Ray.

Paper reference numbers (the ablation tables of Sec. 5 and the appendix's CIN loss table, medians over datasets)
travel with each study so the ablation table can show them next to the measured ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Union

from pipeline.config import TrainConfig

StudyName = Literal["pin-loss", "decoder", "prior", "cin-loss", "coupling", "surplus-k", "curriculum", "hparams"]
STUDY_NAMES: tuple[str, ...] = ("pin-loss", "decoder", "prior", "cin-loss", "coupling", "surplus-k", "curriculum",
                                "hparams")


@dataclass(frozen=True)
class Grid:
    """Every value is tried (Tune ``grid_search``)."""

    values: tuple


@dataclass(frozen=True)
class Choice:
    """One value drawn uniformly per trial."""

    values: tuple


@dataclass(frozen=True)
class LogUniform:
    """A float drawn log-uniformly in ``[low, high]`` per trial."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not 0 < self.low < self.high:
            raise ValueError(f"LogUniform needs 0 < low < high, got [{self.low}, {self.high}]")


Domain = Union[Grid, Choice, LogUniform]


@dataclass(frozen=True)
class Study:
    """One ablation: what varies, how variants are named, and the paper's numbers for them.

    Attributes
    ----------
    name : str
        CLI name, e.g. ``pin-loss``.
    title : str
        Table caption.
    space : dict
        Dotted TrainConfig key -> :data:`Domain`.
    labels : dict
        Value of the (single) grid key -> the paper's name of the variant.
    paper : dict
        Variant label -> paper metrics (``syn_ari``, ``syn_nmi``, ``real_ari``, ``real_nmi``, ``ms_per_step``,
        ``syn_k_medae``, ``real_k_medae``, ``syn_ari_gmm``, ``syn_ari_zeus``); empty where the paper has none.
    by_family : bool
        Also evaluate on GMM-only and ZEUS-only held-out tasks (the prior study's columns).
    choice : str
        The label of the paper's chosen variant (what every other variant is tested against), or "".
    primary : str
        The per-task score the study is about: ``ari`` (higher is better) or ``k_abs_err`` (lower is better).
    """

    name: str
    title: str
    space: Mapping[str, Domain]
    labels: Mapping[Any, str] = field(default_factory=dict)
    paper: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    by_family: bool = False
    choice: str = ""
    primary: str = "ari"

    @property
    def is_grid(self) -> bool:
        """True when every key is a :class:`Grid` (trials = product of values, times seeds)."""
        return all(isinstance(d, Grid) for d in self.space.values())

    def variant(self, overrides: Mapping[str, Any]) -> str:
        """Display name of a trial from its overrides (the paper's name for a grid study's value); the run seed
        of a repeated grid study is not part of the name, so the seeds of a variant share it."""
        keys = [k for k in self.space if k in overrides and k != "seed"]
        if self.labels and len(keys) == 1:
            value = overrides[keys[0]]
            return self.labels.get(value, str(value))
        return ", ".join(f"{k.rsplit('.', 1)[-1]}={_short(overrides[k])}" for k in keys)


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


_SYN_REAL = ("syn_ari", "syn_nmi", "real_ari", "real_nmi")


def _paper(rows: Mapping[str, tuple], keys: tuple[str, ...] = _SYN_REAL) -> dict[str, dict[str, float]]:
    return {label: dict(zip(keys, values)) for label, values in rows.items()}


def _hparam_space(base: TrainConfig, budget_steps: int) -> dict[str, Domain]:
    """Learning rate around the base, warm-up as 0/5%/20% of the budget, and half/base/double cell width."""
    warmups = tuple(sorted({0, budget_steps // 20, budget_steps // 5}))
    m = base.model
    widths = tuple(w for w in (m.col_dim // 2, m.col_dim, 2 * m.col_dim)
                   if w >= 1 and w % m.col_heads == 0 and w % m.row_heads == 0 and (w * m.n_cls) % m.dec_heads == 0)
    return {
        "optim.lr": LogUniform(base.optim.lr / 3, base.optim.lr * 3),
        "optim.warmup_steps": Choice(warmups),
        "model.col_dim": Choice(widths),
    }


def study_space(name: str, base: TrainConfig, budget_steps: int) -> Study:
    """The :class:`Study` called ``name`` for runs of ``budget_steps`` steps from ``base``.

    Raises
    ------
    ValueError
        For an unknown study name (the message lists the known ones).
    """
    if name == "pin-loss":
        return Study(
            name, "PIN loss ablation (paper Sec. 5)",
            {"objective.pin_loss": Grid(("soft_ari", "soft_nmi", "matching_ce", "matching_softacc"))},
            labels={"soft_ari": "SoftARI", "soft_nmi": "SoftNMI", "matching_ce": "Matching+CE",
                    "matching_softacc": "Matching+SoftAcc"},
            paper=_paper({"Matching+SoftAcc": (0.8021, 0.7364, 0.3814, 0.4071, 70.0346),
                          "Matching+CE": (0.8627, 0.7637, 0.3507, 0.4070, 6.2625),
                          "SoftNMI": (0.7637, 0.6929, 0.3915, 0.4250, 3.3658),
                          "SoftARI": (0.8308, 0.8000, 0.3853, 0.4237, 2.9695)}, _SYN_REAL + ("ms_per_step",)),
            choice="SoftARI")
    if name == "decoder":
        return Study(
            name, "PIN decoder ablation (paper Sec. 5)",
            {"model.decoder": Grid(("naive", "transformer", "iterative"))},
            labels={"naive": "Naive (SA+MLP)", "transformer": "Non-iterative (Transformer)",
                    "iterative": "Iterative"},
            paper=_paper({"Naive (SA+MLP)": (0.8137, 0.7446, 0.3589, 0.3271),
                          "Non-iterative (Transformer)": (0.8229, 0.7523, 0.3505, 0.3865),
                          "Iterative": (0.8308, 0.8000, 0.3853, 0.4237)}), choice="Iterative")
    if name == "prior":
        return Study(
            name, "Prior data ablation (paper Sec. 5, median ARI)",
            {"stream.kind": Grid(("gmm", "zeus", "mix"))},
            labels={"gmm": "GMM", "zeus": "ZEUS", "mix": "GMM+ZEUS"},
            paper=_paper({"GMM": (0.8236, 0.5434, 0.7428, 0.2270), "ZEUS": (0.6758, 0.8047, 0.7405, 0.3414),
                          "GMM+ZEUS": (0.8230, 0.8334, 0.8308, 0.3853)},
                         ("syn_ari_gmm", "syn_ari_zeus", "syn_ari", "real_ari")),
            by_family=True, choice="GMM+ZEUS")
    if name == "cin-loss":
        return Study(
            name, "CIN loss ablation (paper appendix, median k-error)",
            {"model.cin_head": Grid(("categorical", "ordinal"))},
            labels={"categorical": "CE", "ordinal": "Order-aware"},
            paper=_paper({"Order-aware": (1.0, 2.5), "CE": (0.0, 1.0)}, ("syn_k_medae", "real_k_medae")),
            choice="CE", primary="k_abs_err")
    if name == "coupling":
        return Study(
            name, "Decoupled optimisation ablation (paper Sec. 5)",
            {"objective.coupling": Grid(("additive", "decoupled"))},
            labels={"additive": "Additive", "decoupled": "Decoupled"},
            paper=_paper({"Additive": (0.8103, 0.7227, 0.3544, 0.3716),
                          "Decoupled": (0.8308, 0.8000, 0.3853, 0.4237)}), choice="Decoupled")
    if name == "surplus-k":  # not in the paper: PIN also trained at a K' above the true K (ObjectiveConfig)
        return Study(
            name, "Surplus-K PIN term (not in the paper; k-error shows whether CIN gains)",
            {"objective.surplus_k_weight": Grid((0.0, 0.5, 1.0))},
            labels={0.0: "True K only (paper)", 0.5: "Surplus K x0.5", 1.0: "Surplus K x1"},
            choice="True K only (paper)", primary="k_abs_err")
    if name == "curriculum":  # not in the paper: the largest N of the tasks ramps up over the budget's first half
        ramp = max(1, budget_steps // 2)
        return Study(
            name, "N curriculum (not in the paper; equal steps, so ms/step shows the compute it saves)",
            {"stream.curriculum_steps": Grid((0, ramp))},
            labels={0: "No curriculum (paper)", ramp: f"N ramped over {ramp} steps"},
            choice="No curriculum (paper)")
    if name == "hparams":
        return Study(name, "Learning rate, warm-up and model width", _hparam_space(base, budget_steps))
    raise ValueError(f"unknown study {name!r}: choose one of {', '.join(STUDY_NAMES)}")


def with_seeds(study: Study, base_seed: int, num_samples: int) -> Study:
    """A grid study repeated over ``num_samples`` run seeds (``seed`` becomes one more grid key)."""
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    if num_samples == 1 or not study.is_grid:
        return study
    seeds = Grid(tuple(base_seed + i for i in range(num_samples)))
    return dataclasses.replace(study, space={**study.space, "seed": seeds})


def representative_values(domain: Domain) -> tuple:
    """Values that exercise a domain: every grid/choice value, or both ends of a log-uniform range."""
    if isinstance(domain, (Grid, Choice)):
        return tuple(domain.values)
    return (domain.low, domain.high)


def to_tune(space: Mapping[str, Domain]) -> dict[str, Any]:
    """A study's space as a Ray Tune ``param_space`` (keys unchanged)."""
    from ray import tune

    out: dict[str, Any] = {}
    for key, domain in space.items():
        if isinstance(domain, Grid):
            out[key] = tune.grid_search(list(domain.values))
        elif isinstance(domain, Choice):
            out[key] = tune.choice(list(domain.values))
        else:
            out[key] = tune.loguniform(domain.low, domain.high)
    return out
