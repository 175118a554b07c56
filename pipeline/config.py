"""Configuration of a pretraining run: small frozen dataclasses, composed, with one dict/override loader.

``TrainConfig`` holds a ``ModelConfig``, an ``ObjectiveConfig``, an ``OptimConfig`` and a ``StreamConfig`` (which
holds the ``PriorConfig``). ``config_to_dict`` / ``config_from_dict`` turn any of them into plain JSON-able
dicts and back (rejecting unknown keys), ``flatten`` gives the dotted ``a.b=value`` view logged to MLflow, and
``apply_overrides`` applies ``a.b=value`` strings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import numbers
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from model import ModelConfig
from model.checkpoint import read_checkpoint
from model.objective import ObjectiveConfig
from priors import PriorConfig
from priors.regimes import regime_prior

logger = logging.getLogger(__name__)

PriorKind = Literal["mix", "gmm", "zeus"]

#: Training task seeds are ``seed * 2**40 + step * 2**13 + index`` (see ``prior_stream.task_seed``).
MAX_RUN_SEED = 2**22
MAX_TASKS_PER_STEP = 2**13
MAX_STEPS = 2**27


@dataclass(frozen=True)
class OptimConfig:
    """AdamW with a linear warm-up then a cosine decay to ``min_lr_ratio * lr`` at ``max_steps``.

    ``max_temperature``: an upper bound on the cosine head's learnable temperature, kept by clamping it before
    every step and after it (as CLIP bounds its logit scale at 100); None leaves it free. A free temperature
    can run away: the shipped weights reached 444, where 84 % of the rows of held-out prior tasks are assigned
    with probability > 0.999, and two thirds of the wrongly assigned rows get a SoftARI gradient below 1e-6, so
    training no longer moves them (``docs/DESIGN.md``, "Temperature").
    """

    lr: float = 1e-4
    betas: tuple[float, float] = (0.9, 0.95)
    weight_decay: float = 0.01
    eps: float = 1e-6
    warmup_steps: int = 2000
    min_lr_ratio: float = 0.0
    grad_clip: float = 1.0
    max_temperature: float | None = None

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"OptimConfig.lr must be > 0, got {self.lr}")
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"OptimConfig.betas must be two numbers in [0, 1), got {self.betas}")
        if self.warmup_steps < 0 or self.weight_decay < 0 or self.eps <= 0 or self.grad_clip <= 0:
            raise ValueError("OptimConfig: warmup_steps and weight_decay must be >= 0, eps and grad_clip > 0")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"OptimConfig.min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        if self.max_temperature is not None and not self.max_temperature > 0:
            raise ValueError(f"OptimConfig.max_temperature must be > 0 or None (no bound), got {self.max_temperature}")


@dataclass(frozen=True)
class StreamConfig:
    """The prior stream: which prior, how tasks are grouped by size, and the actor pool that generates them.

    Each optimisation step draws one N-bucket and one D-bucket (``size_buckets`` equal-width slices of the
    prior's N and D ranges, picked with probability proportional to their width) and every task of the step
    samples N and D inside them, so micro-batches need little padding, workers get equal work, and the marginal
    over N and D stays the prior's. ``curriculum_steps > 0`` ramps the largest N linearly from
    ``curriculum_n_start`` (None: the prior's smallest N) to the prior's largest N over that many steps.
    ``p_one_mode``: the share of tasks that are tables with one mode and no cluster structure
    (:mod:`priors.onemode`, K = 2, labelled by a cut of their first principal component), which the paper's prior
    never draws; 0 (the paper's stream) by default.
    """

    kind: PriorKind = "mix"
    prior: PriorConfig = field(default_factory=PriorConfig)
    size_buckets: int = 4
    curriculum_steps: int = 0
    curriculum_n_start: int | None = None
    p_one_mode: float = 0.0
    num_actors: int = 2
    actor_cpus: float = 0.5
    prefetch_batches: int = 2
    buffer_mb: int = 512

    def __post_init__(self) -> None:
        if self.kind not in ("mix", "gmm", "zeus"):
            raise ValueError(f"unknown prior kind {self.kind!r}: use 'mix', 'gmm' or 'zeus'")
        if self.size_buckets < 1 or self.num_actors < 1 or self.prefetch_batches < 0 or self.buffer_mb < 1:
            raise ValueError("StreamConfig: size_buckets, num_actors and buffer_mb must be >= 1, "
                             "prefetch_batches >= 0")
        if not self.actor_cpus > 0:
            raise ValueError(f"StreamConfig.actor_cpus must be > 0, got {self.actor_cpus}")
        if self.curriculum_steps < 0:
            raise ValueError("StreamConfig.curriculum_steps must be >= 0")
        if not 0.0 <= self.p_one_mode <= 1.0:
            raise ValueError(f"StreamConfig.p_one_mode must lie in [0, 1], got {self.p_one_mode}")
        if self.curriculum_n_start is not None and not (
            self.prior.n_rows[0] <= self.curriculum_n_start <= self.prior.n_rows[1]
        ):
            raise ValueError(f"StreamConfig.curriculum_n_start={self.curriculum_n_start} must lie in the prior's "
                             f"N range {self.prior.n_rows}")


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides what a pretraining run computes (not where it writes).

    The global batch (tasks per optimisation step) is ``micro_batch * accum_steps * num_workers``: each worker
    accumulates ``accum_steps`` micro-batches. ``precision`` is the GPU forward pass's: bf16 autocast (losses,
    Gram matrices and cosine logits stay float32) or plain float32 (TF32 matmuls); CPU runs are float32.
    ``fault_step`` is a test hook: when set, the last worker raises
    once (guarded by a marker file in the run directory) just before that step, to exercise recovery.
    """

    model: ModelConfig = field(default_factory=lambda: ModelConfig.preset("small"))
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    max_steps: int = 10_000
    global_batch: int = 512
    micro_batch: int = 8
    num_workers: int = 1
    use_gpu: bool = False
    precision: Literal["bf16", "fp32"] = "bf16"
    seed: int = 0
    checkpoint_every: int = 100
    val_every: int = 100
    val_tasks: int = 64
    log_every: int = 1
    progress_every: int = 10
    max_failures: int = 2
    init_checkpoint: str | None = None
    fault_step: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_steps", "global_batch", "micro_batch", "num_workers", "checkpoint_every", "val_every",
                     "log_every", "progress_every"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"TrainConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.global_batch % (self.micro_batch * self.num_workers):
            raise ValueError(
                f"global_batch={self.global_batch} is not a multiple of micro_batch * num_workers = "
                f"{self.micro_batch} * {self.num_workers}; choose a batch size divisible by it")
        if self.global_batch > MAX_TASKS_PER_STEP:
            raise ValueError(f"global_batch must be <= {MAX_TASKS_PER_STEP} (task seed layout), "
                             f"got {self.global_batch}")
        if not 0 <= self.seed < MAX_RUN_SEED:
            raise ValueError(f"seed must be in [0, {MAX_RUN_SEED}), got {self.seed}")
        if self.max_steps >= MAX_STEPS:
            raise ValueError(f"max_steps must be < {MAX_STEPS}, got {self.max_steps}")
        if self.val_tasks < 0 or self.max_failures < -1:
            raise ValueError("val_tasks must be >= 0 and max_failures >= -1")
        if self.precision not in ("bf16", "fp32"):
            raise ValueError(f"precision must be 'bf16' or 'fp32' (autocast dtype on GPU), got {self.precision!r}")
        if self.fault_step is not None and not 1 <= self.fault_step <= self.max_steps:
            raise ValueError(f"fault_step must be in [1, max_steps], got {self.fault_step}")

    @property
    def accum_steps(self) -> int:
        """Micro-batches each worker accumulates per optimisation step."""
        return self.global_batch // (self.micro_batch * self.num_workers)


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """A (nested) config dataclass -> plain dict of JSON-able values (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


def _coerce(tp: Any, value: Any, where: str) -> Any:
    """Convert a plain JSON value to the annotated type ``tp`` (dataclasses, tuples, optionals, scalars).

    Strict, because a lax conversion turns a typo into a different run: ``max_steps=1.5`` or ``seed=true`` must
    not become 1, nor ``n_rows=100`` a one-element range. Every refusal is a ``ValueError`` naming the key path.
    """
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is not type(None):
                try:
                    return _coerce(arg, value, where)
                except ValueError as exc:
                    errors.append(str(exc))
        if len(errors) == 1:
            raise ValueError(errors[0])
        raise ValueError(f"{where}: {value!r} fits none of {tp} ({'; '.join(errors)})")
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected a mapping of {tp.__name__} fields, got {value!r}; set one field "
                             f"with {where}.<field>=value")
        return config_from_dict(tp, value, where)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * (len(value) if isinstance(value, (list, tuple)) else 0)
        if not isinstance(value, (list, tuple)) or len(value) != len(args):
            raise ValueError(f"{where}: expected a list of {len(args)} values, got {value!r} (e.g. {where}=[a,b])")
        return tuple(_coerce(arg, v, f"{where}[{i}]") for i, (arg, v) in enumerate(zip(args, value)))
    if origin is Literal:
        if value not in typing.get_args(tp):
            raise ValueError(f"{where}: {value!r} is not one of {typing.get_args(tp)}")
        return value
    if tp is bool:
        if isinstance(value, bool) or type(value).__name__ == "bool_":  # numpy's bool from a Tune space
            return bool(value)
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ValueError(f"{where}: expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, numbers.Real) and not isinstance(value, bool) and float(value).is_integer():
            return int(value)  # 1e3 from JSON
        raise ValueError(f"{where}: expected an integer, got {value!r}")
    if tp is float:
        number = None
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):  # e.g. "1e-3" from a YAML file
            with contextlib.suppress(ValueError):
                number = float(value)
        if number is None or not math.isfinite(number):
            raise ValueError(f"{where}: expected a finite number, got {value!r}")
        return number
    if tp is str:
        if not isinstance(value, str):
            raise ValueError(f"{where}: expected a string, got {value!r} (quote it: {where}='\"...\"')")
        return value
    return value


def config_from_dict(cls: type, data: dict[str, Any], where: str = "") -> Any:
    """Build dataclass ``cls`` from a (nested) plain dict; unknown keys raise ``ValueError`` naming them."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} keys {unknown} at {where or 'top level'}; known: {sorted(names)}")
    kwargs = {k: _coerce(hints[k], v, f"{where}.{k}" if where else k) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a __post_init__ comparing a value of the wrong kind
        raise ValueError(f"{where or cls.__name__}: {exc}") from None


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dict -> ``{"a.b": value}``."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def apply_overrides(cfg: TrainConfig, overrides: dict[str, Any] | list[str] | tuple[str, ...]) -> TrainConfig:
    """Set dotted fields: a dict ``{"optim.lr": 1e-3}`` or strings ``"optim.lr=1e-3"`` (values parsed as JSON
    when possible, else kept as strings). Unknown keys raise ``ValueError``; the result is validated."""
    if not isinstance(overrides, dict):
        parsed: dict[str, Any] = {}
        for item in overrides:
            key, sep, raw = item.partition("=")
            if not sep:
                raise ValueError(f"override {item!r} must look like key.path=value")
            try:
                parsed[key.strip()] = json.loads(raw)
            except json.JSONDecodeError:
                parsed[key.strip()] = raw
        overrides = parsed
    data = config_to_dict(cfg)
    for key, value in overrides.items():
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                raise ValueError(f"override {key!r}: {part!r} is not a config section")
            node = node[part]
        if parts[-1] not in node:
            raise ValueError(f"override {key!r}: unknown key {parts[-1]!r}; known: {sorted(node)}")
        node[parts[-1]] = value
    return config_from_dict(TrainConfig, data)


def train_preset(name: Literal["paper", "small", "tiny"], *, smoke: bool = False) -> TrainConfig:
    """Run settings for a model preset.

    ``paper``: the paper's schedule (512 tasks/step, 10k steps, 2k warm-up, peak lr 1e-4; N 500-1000, D 2-64).
    ``small``: the ``small`` network with a CPU-sized schedule on the paper's prior. ``tiny``: for tests.
    ``smoke=True`` shrinks any of them to a run of about a minute on a 2-core CPU (tiny data, a few steps).
    """
    if name == "paper":
        cfg = TrainConfig(model=ModelConfig.preset("paper"), checkpoint_every=200, val_every=500)
    elif name == "small":
        cfg = TrainConfig(model=ModelConfig.preset("small"), max_steps=2000, global_batch=64, micro_batch=8,
                          optim=OptimConfig(lr=3e-4, warmup_steps=200), checkpoint_every=100, val_every=200,
                          val_tasks=32)
    elif name == "tiny":
        cfg = TrainConfig(model=ModelConfig.preset("tiny"), max_steps=50, global_batch=8, micro_batch=4,
                          optim=OptimConfig(lr=1e-3, warmup_steps=10), objective=ObjectiveConfig(
                              warmup_matching_steps=10), checkpoint_every=25, val_every=25, val_tasks=8,
                          stream=StreamConfig(prior=dataclasses.replace(PriorConfig(), n_rows=(60, 120),
                                                                        n_features=(2, 8))))
    else:
        raise ValueError(f"unknown preset {name!r}: choose 'paper', 'small' or 'tiny'")
    if smoke:
        prior = dataclasses.replace(cfg.stream.prior, n_rows=(60, 100), n_features=(2, 6))
        cfg = dataclasses.replace(
            cfg, max_steps=8, global_batch=4, micro_batch=2, checkpoint_every=4, val_every=4, val_tasks=4,
            progress_every=2, optim=dataclasses.replace(cfg.optim, warmup_steps=2),
            objective=dataclasses.replace(cfg.objective, warmup_matching_steps=2),
            stream=dataclasses.replace(cfg.stream, prior=prior, num_actors=1, actor_cpus=0.5))
    return cfg


def with_regime(cfg: TrainConfig, regime: str) -> TrainConfig:
    """``cfg`` trained on regime ``regime``'s prior (:func:`priors.regimes.regime_prior`: the paper's amortized or
    Cluster-PFN regime), drawn with its mechanism (``kind="gmm"``); model and schedule are kept."""
    return dataclasses.replace(cfg, stream=dataclasses.replace(cfg.stream, prior=regime_prior(regime), kind="gmm"))


def seeds_used(metadata: dict[str, Any]) -> set[int]:
    """Run seeds a checkpoint's weights were trained with: each lineage phase's (branches of an average and the
    CIN donor's lineage of a graft included) and its own ``train_config``'s. Phases recorded before seeds were
    saved contribute nothing."""
    used: set[int] = set()

    def visit(phases: list[Any]) -> None:
        for phase in phases:
            if isinstance(phase, dict):
                if isinstance(phase.get("seed"), int):
                    used.add(phase["seed"])
                for branch in phase.get("branches", []):
                    visit(branch)
                visit(phase.get("cin_lineage", []))

    visit(metadata.get("lineage", []))
    seed = (metadata.get("train_config") or {}).get("seed")
    if isinstance(seed, int):
        used.add(seed)
    return used


def adopt_init_checkpoint(cfg: TrainConfig) -> TrainConfig:
    """With ``cfg.init_checkpoint``: make its path absolute (workers run elsewhere) and take the model config
    from the checkpoint, so training continues the network it holds.

    Refuses a seed that trained the checkpoint (see :func:`seeds_used`): task seeds depend on (seed, step, index)
    only, so the continuation would see exactly the prior tasks its parent already learned from.
    """
    if not cfg.init_checkpoint:
        return cfg
    path = Path(cfg.init_checkpoint).resolve()
    payload = read_checkpoint(path)
    used = seeds_used(payload["metadata"])
    if cfg.seed in used:
        free = min(set(range(len(used) + 1)) - used)
        raise ValueError(f"seed {cfg.seed} already trained --init-checkpoint {path} (its phases used seeds "
                         f"{sorted(used)}), so this run would replay the same prior tasks: pass --seed with an "
                         f"unused value, e.g. --seed {free}")
    if cfg.objective.warmup_matching_steps > 0:
        logger.warning("continuing %s with %d Matching+CE warm-up steps (objective.warmup_matching_steps): the "
                       "warm-up breaks the symmetry of random weights, and on trained ones it replaces the PIN "
                       "loss for those steps; pass --set objective.warmup_matching_steps=0 unless that is meant",
                       path.name, cfg.objective.warmup_matching_steps)
    model_cfg = ModelConfig.from_dict(payload["model_config"])
    if model_cfg.k_ranker:
        logger.info("%s carries a K ranker fitted to its weights: the continuation starts without it (fit one to "
                    "the result with jobs/fit_k_ranker.py)", path.name)
        model_cfg = model_cfg.without_k_ranker()
    return dataclasses.replace(cfg, model=model_cfg, init_checkpoint=str(path))
