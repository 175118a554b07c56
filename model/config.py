"""Architecture contract of TabClustPFN: one frozen dataclass and its named presets."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from model.refinement import REFINED_CANDIDATES

DecoderKind = Literal["iterative", "transformer", "naive"]
CinHead = Literal["categorical", "ordinal"]


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the encoder (TabICL-style), the PIN decoder and the CIN head.

    The row representation width is ``d_model = col_dim * n_cls`` (the CLS outputs are concatenated).

    ``value_skip`` (our addition to the paper's encoder, on in the ``small`` and ``tiny`` presets): the row
    representation also gets the row's numeric values through learned per-position feature codes, initialised
    orthonormal, so at initialisation (with ``max_features <= d_model``, as in ``small``) it is an isometry of the
    row's (clipped) numeric values plus a gated CLS summary.
    Without it the CLS tokens start as an average over the features, which keeps little of the rows' geometry
    (k-means on the initial representation: median ARI 0.05 on the validation prior against 0.52 on the raw
    values), and training did not recover it within 225k tasks.

    ``proto_seeding`` and ``row_updates=False`` (our departures from the paper's decoder, ``small`` preset; see
    docs/DESIGN.md for the learning races): the prototypes start as learned vectors plus (times a learned gain) the
    rows picked by farthest-point sampling, so they differ from the first block on as k-means' seeds do; and the
    rows stay the encoder's (no data<-prototype blocks), whose updates overwrote the rows' geometry in a trained
    network (k-means on the rows the head scores: 0.30 against 0.71 on the encoder's rows at D = 4).

    ``cat_skip`` (the value skip's counterpart for categorical columns, on in ``small`` and ``tiny``): the row
    representation also gets, per categorical column, a learned code of its category (one per column position and
    category, initialised as random near-orthogonal unit vectors, centred over the context rows), so at
    initialisation it is close to an isometry of the one-hot encoding k-means would use. Without it a table's
    categorical columns reach the rows only through the CLS summary, which keeps little of them (ZEUS tasks with
    27 of 30 columns categorical: k-means on the encoder's rows 0.17 against 1.00 on the one-hot values;
    docs/DESIGN.md).

    ``k_ranker``: the network carries a :class:`model.k_ranker.KRanker`, fitted to its final weights after
    training (``jobs/fit_k_ranker.py``); pretraining never trains it, and a run continued from such a checkpoint
    starts without it (a changed network needs its ranker fitted again). ``k_ranker_features``: the feature set
    (:data:`model.k_features.FEATURE_SETS`) that ranker reads; ``k_ranker_candidates``, the partitions its features
    describe (the Lloyd-refined candidates, or their diagonal mixtures). ``k_ranker_temperature``: the
    temperature that turns the ranker's scores into the probability that each K is the labelled one (a softmax of
    score / temperature), fitted on held-out ranker tables (``jobs/calibrate_k_ranker.py``); 0: not calibrated.
    ``k_ranker_temperature_slope``: how much that temperature grows on tables whose continuous columns hold few
    distinct values (``model.k_ranker.table_temperature``), fitted on the development suite's real tables; 0: one
    temperature for every table.
    """

    col_dim: int = 128  # E of a cell embedding
    col_blocks: int = 3  # induced set-attention blocks over the N values of a column
    col_heads: int = 4
    col_inducing: int = 128
    row_blocks: int = 3  # transformer blocks over the D cells + CLS tokens of a row
    row_heads: int = 8
    n_cls: int = 4
    dec_blocks: int = 6  # L
    dec_heads: int = 4
    ff_factor: int = 2
    k_max: int = 10
    max_features: int = 64
    max_categories: int = 16  # categorical codes are embedded modulo this
    cin_hidden: int = 256
    decoder: DecoderKind = "iterative"
    cin_head: CinHead = "categorical"
    value_skip: bool = False
    proto_competition: bool = False  # iterative decoder: prototypes compete for rows (see layers.CompetitiveMAB)
    row_updates: bool = True  # iterative decoder: the paper's data<-prototype blocks; False keeps the rows fixed
    proto_seeding: bool = False  # iterative decoder: prototypes start at rows picked by farthest-point sampling
    cat_skip: bool = False  # encoder: categorical columns' codes join the row representation directly
    #: a fitted choice of K (model.k_ranker.KRanker) travels with the weights; fitted after training (never by it)
    k_ranker: bool = False
    #: the features that ranker reads (model.k_features.FEATURE_SETS); 1 for checkpoints written before set 2
    k_ranker_features: int = 1
    #: the partitions that ranker's features describe (model.k_features.CANDIDATE_STAGES); "kmeans" before 2026-11-29
    k_ranker_candidates: str = "kmeans"
    #: softmax temperature of that ranker's scores for calibrated probabilities over K; 0: not calibrated
    k_ranker_temperature: float = 0.0
    #: growth of that temperature as a table's fraction of distinct values falls; 0: the same for every table
    k_ranker_temperature_slope: float = 0.0

    def __post_init__(self) -> None:
        for name in ("col_dim", "col_blocks", "col_heads", "col_inducing", "row_blocks", "row_heads", "n_cls",
                     "dec_blocks", "dec_heads", "ff_factor", "max_features", "max_categories", "cin_hidden"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"ModelConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.k_max < 3:
            raise ValueError(f"ModelConfig.k_max must be >= 3, got {self.k_max}")
        if self.col_dim % self.col_heads or self.col_dim % self.row_heads:
            raise ValueError("col_dim must be divisible by col_heads and row_heads")
        if self.d_model % self.dec_heads:
            raise ValueError("d_model (col_dim * n_cls) must be divisible by dec_heads")
        if self.decoder not in ("iterative", "transformer", "naive"):
            raise ValueError(f"unknown decoder {self.decoder!r}: use 'iterative', 'transformer' or 'naive'")
        if self.k_ranker_candidates not in REFINED_CANDIDATES:
            raise ValueError(f"unknown k_ranker_candidates {self.k_ranker_candidates!r}: use one of "
                             f"{REFINED_CANDIDATES}")
        if not self.k_ranker_temperature >= 0:
            raise ValueError(f"ModelConfig.k_ranker_temperature must be >= 0, got {self.k_ranker_temperature}")
        if not self.k_ranker_temperature_slope >= 0:
            raise ValueError("ModelConfig.k_ranker_temperature_slope must be >= 0, got "
                             f"{self.k_ranker_temperature_slope}")
        if self.cin_head not in ("categorical", "ordinal"):
            raise ValueError(f"unknown cin_head {self.cin_head!r}: use 'categorical' or 'ordinal'")

    @property
    def d_model(self) -> int:
        return self.col_dim * self.n_cls

    @property
    def n_candidates(self) -> int:
        """Number of candidate cluster counts K = 2..k_max."""
        return self.k_max - 1

    def without_k_ranker(self) -> "ModelConfig":
        """This config without a K ranker and without its calibration (which describes that ranker alone)."""
        return dataclasses.replace(self, k_ranker=False, k_ranker_temperature=0.0, k_ranker_temperature_slope=0.0)

    @classmethod
    def preset(cls, name: Literal["paper", "small", "tiny"], **overrides: Any) -> "ModelConfig":
        """``paper``: the reference sizes; ``small``: CPU pretraining; ``tiny``: tests."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}: choose one of {sorted(PRESETS)}")
        return dataclasses.replace(PRESETS[name], **overrides)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelConfig":
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ValueError(f"unknown ModelConfig keys {unknown}; known keys are {sorted(fields)}")
        for name, value in data.items():  # the type of each default: int sizes, bool flags, str choices
            kind = type(fields[name].default)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                # e.g. "false" for a flag would be truthy: another network on the same weights, silently
                raise ValueError(f"ModelConfig.{name} must be a {kind.__name__}, got {value!r}")
        return cls(**data)


PRESETS: dict[str, ModelConfig] = {
    "paper": ModelConfig(),
    "small": ModelConfig(col_dim=32, col_blocks=1, col_heads=4, col_inducing=16, row_blocks=2, row_heads=4,
                         n_cls=4, dec_blocks=3, dec_heads=4, value_skip=True, proto_competition=True,
                         proto_seeding=True, row_updates=False, cat_skip=True),
    "tiny": ModelConfig(col_dim=8, col_blocks=1, col_heads=2, col_inducing=4, row_blocks=1, row_heads=2,
                        n_cls=2, dec_blocks=1, dec_heads=2, cin_hidden=32, value_skip=True,
                        proto_competition=True, cat_skip=True),
}
