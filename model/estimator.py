"""The scikit-learn clusterer users call: ``TabClustPFN(n_clusters=None).fit(X)``."""

from __future__ import annotations

import copy
import functools
import logging
import os
import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from model.blas_threads import blas_threads
from model.cells import checked_codes, user_stacklevel, without_codes
from model.checkpoint import load_checkpoint, weights_sha256
from model.dequantize import DEFAULT_DEQUANTIZE
from model.dequantize import dequantize as dequantize_frame
from model.dequantize import dequantize_rows
from model.power import DEFAULT_POWER_TRANSFORM, MIN_SKEWNESS
from model.ensemble import DEFAULT_N_ESTIMATORS, average_matched, column_orderings, combine_members
from model.network import ContextInference, TabClustNet
from model.preprocessing import (DEFAULT_IMPUTE, IMPUTE, TablePreprocessor, as_frame, check_unique_names, flag_cuts,
                                 flags_recoded)
from model.refinement import (DEFAULT_REFINE, REFINED_CANDIDATES, REFINES, Centroids, DiagonalMixture, FullMixture,
                              design, lloyd, mixture_refinement, numeric_columns, one_hot_blocks, one_hot_widths,
                              refine_candidates)
from model.k_features import FEATURE_SETS, ranker_features
from model.k_ranker import distinct_fraction, k_probabilities, table_temperature
from model.low_dim import MAX_WIDTH as LOW_DIM_MAX_WIDTH
from model.low_dim import BicChoice
from model.low_dim import CRITERION as LOW_DIM_CRITERION
from model.low_dim import MERGE as LOW_DIM_MERGE
from model.low_dim import fine_columns
from model.low_dim import choose as choose_low_dim
from model.low_dim import discretized_choice
from model.low_dim import kmeans_starts
from model.tiles import MergedMixture
from model.latent_class import CategoricalMixture
from model.latent_class import choose as choose_latent_class
from model.screening import DEFAULT_SCREEN_NOISE, associated_columns, could_only_split, only_splits
from model.selection import (DEFAULT_ESTIMATOR_K_SELECTION, DEFAULT_K_SELECTION, ESTIMATOR_K_SELECTIONS,
                             expected_ari, resolve_k_selection, select_k)
from model.structure import DEFAULT_SINGLE_CLUSTER_Z, structure_test

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import _check_feature_names
except ImportError:  # pragma: no cover - scikit-learn 1.5 has it as a method
    def _check_feature_names(estimator, X, *, reset):
        return estimator._check_feature_names(X, reset=reset)

logger = logging.getLogger(__name__)

#: File name of the checkpoint shipped with the package, in ``model/weights/``.
DEFAULT_CHECKPOINT = "tabclustpfn-small.pt"


def _held_blas(method):
    """``method`` run with numpy's and scipy's BLAS pools held to the estimator's ``_blas_threads``."""
    @functools.wraps(method)
    def held(self, *args, **kwargs):
        with blas_threads(self._blas_threads):
            return method(self, *args, **kwargs)
    return held


@dataclass(frozen=True)
class _Candidates:
    """What a fit that chose K keeps of the partitions it weighed, for the partition at another K
    (``predict(X, n_clusters=k)``): the context's design rows and candidate partitions for K = 2..``k_hi``, their
    refinements and mixtures where the fit made them, BIC's mixtures on the BIC path, and the orderings' cluster
    matchings and partitions where the network assigns."""

    k_hi: int
    rows: np.ndarray | None
    labels: np.ndarray | None
    refined: list | None
    mixtures: list | None
    bic: BicChoice | None
    perms: np.ndarray | None
    network_labels: np.ndarray | None


#: :attr:`TabClustPFN._low_dim_spread`'s values
LOW_DIM_SPREADS = (None, "spread", "spread-unmerged", "discretized")


class KRangeWarning(UserWarning):
    """K was chosen at the top of the range the fit considered: the table may hold more clusters, or none."""


def default_checkpoint_path() -> Path:
    """Where the shipped checkpoint lives (``model/weights/tabclustpfn-small.pt``), whether or not it exists."""
    return Path(__file__).resolve().parent / "weights" / DEFAULT_CHECKPOINT


class TabClustPFN(ClusterMixin, BaseEstimator):
    """Cluster a table in one forward pass of a pretrained TabClustPFN network (no per-dataset fitting).

    The network proposes a soft partition for every K = 2..K_max and a posterior over K (its CIN head). With
    ``n_clusters=None`` one of them is chosen by ``k_selection``; otherwise the given K.

    Parameters
    ----------
    n_clusters : int or None, default=None
        Number of clusters, in 2..K_max of the checkpoint (10 for the shipped one) and smaller than the number
        of rows. None lets the model choose, by ``k_selection``, among K < n_samples.
    checkpoint : str or PathLike or None, default=None
        A file written by :func:`model.checkpoint.save_checkpoint`. None loads the checkpoint shipped in
        ``model/weights/tabclustpfn-small.pt``.
    device : str, default="auto"
        Torch device for inference; "auto" picks "cuda" when available, else "cpu".
    random_state : int, RandomState instance or None, default=None
        Seeds the choice of context rows when the table has more than ``n_context`` rows; nothing else is random.
    n_context : int, default=1000
        Largest number of rows used as the model's context (pretraining saw N <= 1000).
    batch_rows : int, default=1024
        Non-context rows assigned per forward pass (bounds memory in ``fit`` for large N and in ``predict``).
    k_selection : {"auto", "ranker", "expected_ari", "posterior_mode"}, default="auto"
        How K is chosen when ``n_clusters=None`` (:mod:`model.selection`). ``"ranker"``: the K ranker the
        checkpoint carries (:mod:`model.k_ranker`, the shipped one does) picks among the refined candidates from
        each one's posterior, expected ARI and geometry in the table's own space (silhouette, within-cluster
        variance, cluster sizes); it needs ``refine="gmm"`` or ``"kmeans"``. ``"auto"``: the ranker where the
        checkpoint has one and the refine is one of those, else ``"expected_ari"``; with ``refine="gmm"`` on a
        table of at most 4 preprocessed columns (one-hot codes counted), K and the partition of lowest BIC among
        full-covariance Gaussian mixtures run to convergence from k-means++ partitions (the network is not run;
        :mod:`model.low_dim`; ``k_selection_ = "bic"``; chosen on development data: 2-3 columns +0.040 +- 0.009,
        cluster shapes +0.106 +- 0.028, ``docs/results/choice-low-dim*.md``), where BIC took >= 7 components on
        many-valued columns those that tile one cluster (a crescent, a ring) merged into it (:mod:`model.tiles`;
        chosen on cluster shapes and Gaussian blobs, ``choice-low-dim-tiles*.md``); with
        ``refine="gmm"`` on a table whose every kept column is categorical or a numeric 0/1 flag, K and the
        partition of lowest AIC3 among latent class models run to convergence from the network's candidates
        (:mod:`model.latent_class`; ``k_selection_ = "latent-class"``; chosen on development data,
        ``docs/results/choice-categorical-*.md``).
        ``"expected_ari"``: the candidate
        partition with the highest ARI against the network's partition at K', averaged over K' drawn from the
        posterior and over the column orderings, each ordering with its own posterior (the Bayes choice for the
        ARI; a flat posterior gives a central K, not the smallest; a K at which the orderings disagree scores
        lower). ``"posterior_mode"``: the most probable K under ``k_posterior_`` (the paper's rule).
    max_clusters : int or None, default=None
        Largest K the model may choose when ``n_clusters=None``, in 2..K_max of the checkpoint; None allows up to
        K_max. For tables known to hold few groups (the model tends to split tables whose classes are not
        separate clusters into too many). Must be at least ``n_clusters`` when both are given.
    n_estimators : int, default=4
        Orderings of the columns the table is clustered in (:mod:`model.ensemble`): their partitions, clusters
        matched, and their posteriors over K are averaged. The network is not invariant to the column order, and
        each ordering errs differently: on 400 held-out prior tasks 4 orderings raised the median ARI with K
        inferred from 0.547 to 0.701 over one. The cost grows with them (about 2.5x for 4); 1 is the paper's
        single pass, the fast choice (``benchmarks/bench_inference.py`` times both). Tables with
        fewer orderings than that (D! < n_estimators) use all of theirs. The orderings are fixed for a given
        number of columns, so the result does not depend on ``random_state``.

    refine : {"gmm", "kmeans", "none"}, default="gmm"
        Test-time refinement of the network's partitions (:mod:`model.refinement`). ``"kmeans"``: every candidate
        K's partition gets two Lloyd (k-means) steps started from it, in the preprocessed space with categorical
        codes one-hot, before K is chosen among them; rows then go to the nearest of the refined cluster means
        (``probabilities_`` and ``predict_proba`` become a Gaussian with one shared spherical variance around those
        means). ``"gmm"``: the same candidates and K, then the chosen partition refined by three EM steps of a
        Gaussian mixture with a diagonal covariance per cluster (a full one where the preprocessed table has at
        most 4 columns, one-hot codes counted), so clusters may differ in spread, in the columns they are tight
        in and, in few columns, in tilt; ``probabilities_`` and ``predict_proba`` are the mixture's posterior. Chosen
        on development data against ``"kmeans"`` (ARI +0.058 +- 0.004 on held-out prior tasks, +0.031 +- 0.008
        with noise columns, +0.006 +- 0.002 with 2-3 columns, +0.016 +- 0.008 on the 23 development tables;
        ``docs/results/choice-mixture-refine.md``). ``"none"``: the network's
        partitions as they are (the paper's).
    allow_single_cluster : bool, default=False
        With ``n_clusters=None``, answer one cluster (``n_clusters_ = 1``, every label 0) when the table looks like
        a single Gaussian mode: its ``structure_score_`` is above ``single_cluster_z``. The network itself always
        partitions into K >= 2. Off by default, by the decision protocol (``docs/results/choice-structure.md``): on
        development data it answers one cluster for 158 of 200 one-mode tables (ARI 0 -> 1) but also for 80 of
        400 prior tables with K >= 2 (-0.058 +- 0.008 ARI over the set), 63 of 200 with noise columns and
        contaminated rows (-0.100 +- 0.014) and 5 of the 23 development tables (-0.021 +- 0.014). Heavy tails and
        coarse levels read as one mode; a skewed single mode reads as structure.
    single_cluster_z : float, default=model.structure.DEFAULT_SINGLE_CLUSTER_Z
        With ``allow_single_cluster=True``, the ``structure_score_`` above which the answer is one cluster
        (chosen on development data; lower answers one cluster more often, ``inf`` never).
    screen_noise : {"auto", True, False}, default="auto"
        Drop the continuous columns that show no cluster structure, neither a second mode nor a dependence on the
        other columns (:mod:`model.screening`); then put back those that differ between the clusters found
        without them, and cluster again. Pure-noise columns make up most of the distance between rows and bury a
        structure that lives in few columns. ``"auto"``: only in a table where some continuous column has two
        modes (a structure that lives in few columns); ``True``: wherever any column shows structure; ``False``:
        never. The dropped columns are in ``preprocessor_.screened_``; ``predict`` ignores them too. By the
        decision protocol against ``False``: ``"auto"`` gains with one informative column among noise columns
        (+0.010 +- 0.004 ARI on a fresh draw of the development sets, 14 tables better, 3 worse) and screens no
        table of the paper's prior (``docs/results/choice-screening-modes-fresh.md``); ``True`` gains more there
        (+0.088 +- 0.010) but loses on the prior, whose clusters differ a little in every column, some of which
        then look like noise (``docs/results/choice-screening.md``). A categorical column independent of every
        other column is dropped too, wherever some column shows structure, and comes back when its levels differ
        between the clusters found without it, unless clustering with it only splits those clusters by its levels
        (three groups beside a 3-level noise category: K = 3, not 9). A numeric column of two values (a 0/1 flag)
        is screened as a category. By the protocol: tables with such categories +0.066 +- 0.011, with such flags
        +0.020 +- 0.006, on fresh draws of the development sets, no set lost
        (``docs/results/choice-cat-screening-split-fresh2.md``, ``choice-cat-screening-binary-fresh.md``). A kept
        category or flag of a table with numeric columns too is set aside where the clusters found with it are those
        found without it split by its levels (a sex beside species): tables with such a factor +0.011 +- 0.004 on a
        fresh draw, no set lost (``choice-cat-screening-crossing-fresh.md``).
    dequantize : bool, default=False
        Spread every numeric column of 2-20 distinct values (scores, counts, rounded measurements, numeric flags)
        uniformly over its levels' cells before clustering (:mod:`model.dequantize`), so that a lattice of levels
        is not read as clusters; the spread columns are in ``dequantized_``. ``predict`` reads new rows as given.
        Off: it qualified on development data (``docs/results/choice-dequantize*.md``) but lost on the real and
        OpenML test suites (``docs/results/evaluation-test-dequantize-change.md``), whose few-level columns often
        carry the clusters; turn it on for tables of scores or counts that form a lattice.
    power_transform : bool, default=True
        Yeo-Johnson transform every highly skewed numeric column of one mode (at least 20 distinct values, skewness
        beyond 1 in magnitude, no second mode) of a table wider than the BIC path (more than 4 design columns) to
        near-symmetry before clustering (:mod:`model.power`; the exponents are in
        ``preprocessor_.power_transformed_`` and ``predict`` applies them), so that a long tail (prices, amounts,
        concentrations) is not read as clusters. By the decision protocol against ``False``: skewed columns +0.104
        +- 0.011, one informative column among noise ones +0.072 +- 0.010, coarse +0.015 +- 0.005 on a fresh draw
        of the development sets, no set lost (``docs/results/choice-power-fresh.md``).
    impute : {"neighbors", "median"}, default="neighbors"
        How a missing cell is filled before clustering: from the 5 nearest rows that hold it (the mean of a numeric
        column, the most frequent category of a categorical one; nearness on the columns both rows hold, scaled
        up to all columns as scikit-learn's ``KNNImputer`` does, or, in a table with categorical columns, a column
        one of them lacks counted at its average difference), so that a row with a gap stays beside its own
        cluster; or by the column's median (numeric; categorical: its most frequent category), whose point mass
        can read as a cluster of its own (:mod:`model.preprocessing`). ``predict`` imputes new rows from the fitted
        table's rows. By the decision protocol, on development tables with a sixth of their cells removed, fresh
        draws: against ``"median"``, +0.024 to +0.097 ARI per table on 6 of the 7 synthetic sets, +0.007 on the
        prior's, +0.020 on the dev suite (numeric gaps filled, ``docs/results/choice-imputation-{fresh,dev}.md``);
        reading and filling categorical columns too, a further +0.021 to +0.028 on prior, noisy, coarse and skewed
        tables, +0.004 on dev (``choice-imputation-mixed-*.md``); no set lost.
    missing_values : list of numbers and strings, default=None
        Codes your table uses for a missing value (``[-999, "unknown"]``): a cell equal to one, in any column, is read
        as missing and imputed, in ``fit`` and ``predict`` (a number also matches text that reads as it, ``"-999"``).
        Read as values, such codes gather their rows into a cluster of their own; a code in nines far beyond its
        column draws a warning that names it (``preprocessor_.likely_codes_``). None: only NaN, None and the text
        markers ``"?"``, ``"NA"`` and the like among numbers are missing.

    Attributes
    ----------
    labels_ : ndarray of int64, shape (n_samples,)
        Cluster of each row: the argmax of ``probabilities_``.
    n_clusters_ : int
        The K used (given, chosen by ``k_selection_``, or 1 by ``allow_single_cluster``). A chosen K whose
        refined partition leaves a component empty is reported as the clusters that hold rows.
    k_chosen_ : int
        The K that ``k_selection_`` chose (or that was given, or 1); ``n_clusters_`` is smaller where the refined
        partition left components empty.
    k_top_ : int or None
        The most clusters the fit considered (K_max, ``max_clusters`` or the context's rows less one); None where
        ``n_clusters`` was given.
    k_at_top_ : bool
        Whether K was chosen at ``k_top_`` (above 2): the table may hold more clusters, or none. The fit then warns
        (:class:`KRangeWarning`).
    probabilities_ : ndarray of float64, shape (n_samples, n_clusters_)
        Soft assignment of each row; column j is cluster j of ``labels_``.
    k_posterior_ : dict[int, float] or None
        CIN's posterior probability of each K = 2..K_max (sums to 1; the average over the orderings); computed
        even when ``n_clusters`` is given. None where BIC chose K without running the network (``k_selection_ =
        "bic"``: designs of at most 4 columns with the defaults; ``k_probabilities_`` then holds BIC's).
    k_probabilities_ : dict[int, float] or None
        Where the checkpoint's calibrated K ranker chose K: the probability that each K = 2..K_max is the table's
        number of groups (0 where not admissible; its argmax is ``n_clusters_`` unless ``allow_single_cluster``
        answered one cluster or the refinement emptied a component), a softmax of the ranker's scores at a
        temperature fitted on held-out prior tables (``ModelConfig.k_ranker_temperature``), higher for a table
        whose continuous columns hold few distinct values, as real tables' rounded measurements do
        (``k_ranker_temperature_slope``, fitted on the development suite's real tables;
        :func:`model.k_ranker.table_temperature`); see ``docs/results/k-calibration.md``.
        Where the BIC chose K (``k_selection_ = "bic"``; ``"latent-class"``: AIC3): its K gets the probability a
        logistic curve in its margin over the runner-up gives, the other K share the rest as a softmax of
        -BIC / (2N) does, both fitted on development data (:func:`model.low_dim.bic_probabilities`,
        ``docs/results/bic-calibration.md``, ``docs/results/latent-class-calibration.md``); where tiles were merged,
        the merged K takes the probability BIC's own K had.
        None when K was given or chosen otherwise.
    k_scores_ : dict[int, float]
        The score ``k_selection`` maximised for each K = 2..K_max (the ranker's score, -BIC / (2N), the posterior, or
        expected ARI of each candidate, Lloyd-refined unless ``refine="none"``, under the posterior renormalised
        over the K allowed; -inf for K >= n_samples and K > ``max_clusters``; on the BIC path BIC's, whose best K
        exceeds ``n_clusters_`` where tiles of one cluster were merged); computed even when ``n_clusters`` is
        given (then the expected ARI in place of the ranker's score, which needs every candidate refined).
    k_selection_ : str
        The rule that chose K (``k_selection`` with ``"auto"`` resolved; ``"given"`` when ``n_clusters`` is set).
    structure_score_ : float
        With ``allow_single_cluster=True`` and ``n_clusters=None``: how far the table's best two-way split is from
        that of one Gaussian with its covariance, in standard deviations of the latter (:mod:`model.structure`;
        strongly negative: cluster structure, near 0 or above: consistent with one mode). NaN otherwise.
    n_estimators_ : int
        Column orderings used (``n_estimators``, or all D! orderings of a table with fewer; 0 where the network
        was not run, as ``k_posterior_`` None).
    context_indices_ : ndarray of int64
        Rows of ``X`` used as the context (all rows when n_samples <= n_context).
    empty_rows_ : ndarray of int64
        Rows of ``X`` with no value in any usable column (a warning names their count). Filling can only put them at
        the columns' centre, where in a table of few columns they may gather into a cluster of their own: drop them
        before ``fit`` where that matters.
    preprocessor_ : TablePreprocessor
        The fitted preprocessing (see :mod:`model.preprocessing`), reused by ``predict``.
    dequantized_ : list
        The columns ``dequantize`` spread (empty without it).
    n_features_in_ : int
        Number of columns seen in ``fit``.
    feature_names_in_ : ndarray of str, shape (n_features_in_,)
        Column names seen in ``fit``; only defined when ``X`` is a DataFrame with string column names.

    Notes
    -----
    **Preprocessing.** Categorical (``category``/``object``/``bool``) columns become integer codes, missing values
    are imputed, constant columns and categorical identifiers (every value distinct) dropped, a few gross values read
    at fences 10 IQRs past a quartile, numeric columns z-normalised, and more than 64 columns reduced with PCA (with
    a warning); see :mod:`model.preprocessing` for the exact rules and refusals.

    **Large tables (N > n_context).** ``n_context`` rows drawn without replacement (seeded by
    ``random_state``) form the context: only they shape the column statistics, the prototypes and the
    posterior over K. One pass over the context gives K and the context rows' assignments; the other rows are
    then assigned in chunks of ``batch_rows`` as non-context rows, so rows never influence one another. The
    context's share of their encoding (column summaries, prototypes) is computed once and each chunk encodes
    only its own rows, exactly as if it had been processed together with the context. The cost is linear in N
    and the peak memory is set by ``max(n_context, batch_rows)`` rows, whatever N is.

    **Labels.** Clusters are numbered in order of first appearance in ``X`` (row 0 is in cluster 0). With K
    chosen, a component that no row goes to (a chosen K whose refinement empties a cluster: the Gaussian mixture
    of ``refine="gmm"`` often merges a split cluster back) is dropped, and ``probabilities_`` and ``predict_proba``
    are renormalised over the rest: ``labels_`` uses 0..``n_clusters_``-1, each at least once (``k_chosen_`` is
    the K chosen). With ``n_clusters`` given, a cluster that receives no row (a
    K larger than the table's distinct rows) keeps its column, after the non-empty ones, so ``n_clusters_`` is
    the K given. When several K give the same partition, the smallest is chosen.

    **K at the top of the range.** Where K is chosen and comes out the most clusters the fit considers (K_max,
    ``max_clusters`` or the rows less one; above 2), ``fit`` warns (:class:`KRangeWarning`): the table may hold
    more clusters, or none; on generated tables without clusters the shipped model answers K >= 8 on 43 % of 84
    (``docs/results/no-structure.md``). ``predict(X, n_clusters=k)`` shows a smaller K the fit weighed.

    **predict** and **predict_proba** assign new rows with the fitted preprocessing, context and K, as non-context
    rows, or, where the chosen partition was refined (``refine="gmm"`` or ``"kmeans"``), to the most probable
    refined component or the nearest refined mean, as ``fit`` assigned every row of the table. For n_samples <=
    n_context, on the fitted rows they reproduce ``labels_`` and ``probabilities_``.
    ``predict(X, n_clusters=k)`` reads the partition at another K that a fit which chose K weighed (K in 2..the
    largest candidate): its candidate at k, refined as the fit would have refined it had it chosen k (BIC's own
    mixture on the BIC path), so an analyst can look at K = 3 beside the chosen 4 without fitting again; the
    refined partitions need no pass of the network. It is the fit's candidate, which may differ from what
    ``TabClustPFN(n_clusters=k).fit`` returns (that fit refines a single partition and takes no BIC path).

    Examples
    --------
    >>> from sklearn.datasets import make_blobs
    >>> X, _ = make_blobs(n_samples=300, centers=3, random_state=0)
    >>> model = TabClustPFN(random_state=0).fit(X)  # doctest: +SKIP
    >>> model.n_clusters_, model.labels_[:5]  # doctest: +SKIP
    (3, array([0, 1, 1, 2, 0]))
    """

    #: How a calibrated K ranker's answer becomes K: ``"top"``, its most probable K; ``"expected_ari"``, the
    #: candidate of highest expected ARI against the candidate at K ~ its probabilities (minimum Bayes risk, as
    #: :func:`model.selection.expected_ari`); ``"smallest-A"`` (A in (0, 1]), the smallest K whose probability is at
    #: least A times the top one's. A design alternative judged on development data
    #: (``benchmarks/choose_k_decision.py``), not a parameter.
    _ranker_decision = "top"
    #: The skewness beyond which ``power_transform`` transforms a column (``model.power.MIN_SKEWNESS``; 0: every
    #: column of many values). A design alternative judged on development data (``benchmarks/choose_power.py``).
    _power_min_skewness = MIN_SKEWNESS
    #: Whether ``power_transform`` leaves a column with two modes as it is, and the design width a table must
    #: exceed for it (that of the BIC path, whose full-covariance mixtures model the clusters' shapes themselves);
    #: design alternatives, as above.
    _power_keep_modes = True
    _power_min_width = LOW_DIM_MAX_WIDTH
    #: Whether the noise screening drops categorical columns independent of every other column too
    #: (``TablePreprocessor(screen_categorical=)``): ``"always"``, wherever some column depends on another, with
    #: ``_split_check``. A design switch chosen on development data (``benchmarks/choose_categorical_screening.py``,
    #: ``docs/results/choice-cat-screening-split*.md``), not a parameter; False is the baseline it was judged against.
    _screen_categorical = "always"
    #: ``impute="neighbors"`` also reads and fills the categorical columns (chosen 2026-12-05 over numeric columns
    #: only: ``docs/results/choice-imputation-mixed-*.md``; ``False`` is that baseline, for the choice benchmarks)
    _impute_categorical = True
    #: ``impute="neighbors"`` in a table of numeric columns alone: a column one row lacks counts at its average
    #: difference (True) or by ``KNNImputer``'s rescaling (False); judged by ``benchmarks/choose_imputation.py``
    _impute_average_gaps = False
    #: Fences for numeric values (``TablePreprocessor(clip_fences=, fence_max_share=)``): a value beyond Q1 - 10 IQR
    #: or Q3 + 10 IQR of its column is read as the fence, in a column where at most 1 % of the values lie beyond
    #: (a few gross values, not a far group that may be a cluster), so that they do not set the column's scale.
    #: Chosen 2026-12-06 by ``benchmarks/choose_fences.py`` (``docs/results/choice-fences-rare-*.md``); None: none.
    _clip_fences = 10.0
    _fence_max_share = 0.01
    #: the level of its dependence tests for categorical columns (None: the continuous columns'); as above
    _screen_categorical_alpha = None
    #: Screened categorical columns come back unless they only split the clusters found without them
    #: (:meth:`_readmit_unless_only_splitting`); a design switch for ``_screen_categorical="always"``, chosen with it.
    _split_check = True
    #: The kept categorical columns and 0/1 flags of a mixed table set aside where they only split the clusters found
    #: without them (:meth:`_set_aside_if_only_splitting`): ``"together"``, by the test a screened category is put
    #: to; ``"crossing"``, by its strict form (:func:`model.screening.only_splits`). A design switch judged by
    #: ``benchmarks/choose_categorical_screening.py`` on ``cat-cross``; False (none) is the baseline. ``"crossing"``
    #: chosen 2026-12-07 (``docs/results/choice-cat-screening-crossing{,-fresh}.md``).
    _split_check_kept = "crossing"
    #: A numeric column of two values (a 0/1 flag) is screened as a category (``TablePreprocessor(screen_binary=)``);
    #: a design switch chosen by ``benchmarks/choose_categorical_screening.py`` (``categorical-always-split-binary``,
    #: ``docs/results/choice-cat-screening-binary*.md``); False is the baseline it was judged against.
    _screen_binary = True
    #: Numeric columns of 3 to this many distinct values screened as categories
    #: (``TablePreprocessor(screen_levels=)``), as ``_screen_binary`` does flags; 0: none (the baseline). A design
    #: switch judged by ``benchmarks/choose_categorical_screening.py`` on ``level-noise``.
    _screen_levels = 10
    #: ... and only in a design wider than this (``TablePreprocessor(screen_levels_min_width=)``; 0: every table;
    #: ``LOW_DIM_MAX_WIDTH``: only off the BIC path, the network's tables). 10 and ``LOW_DIM_MAX_WIDTH`` chosen
    #: 2026-12-07 (``-levels-wide``, ``docs/results/choice-cat-screening-levels-wide*.md``).
    _screen_levels_min_width = LOW_DIM_MAX_WIDTH
    #: Where the defaults take K from BIC (designs of <= 4 columns, :mod:`model.low_dim`), what its mixtures start
    #: from: ``"kmeans"``, k-means++ partitions, so the network is not run on such a table; ``"network"``, the
    #: network's Lloyd-refined candidates. Judged on development data (``benchmarks/choose_low_dim.py``,
    #: ``docs/results/choice-low-dim-kmeans-starts*.md``); the time it saves: ``benchmarks/bench_low_dim_starts.py``.
    _low_dim_starts = "kmeans"
    #: Where every kept column is categorical (or a flag, below), K and the partition from latent class models
    #: (:mod:`model.latent_class`), their EM started from: ``"kmeans"``, k-means++ partitions of the one-hot codes (the
    #: network is not run); ``"network"``, the network's Lloyd-refined candidates; ``"both"``, the likelier of the two
    #: per K; None: such tables take the network's path like any other (the baseline it was judged against).
    #: Chosen on development data (``benchmarks/choose_categorical_path.py``).
    _categorical_path = "network"
    #: Whether a numeric column of two values (a 0/1 flag) counts as a category for that path (a table of flags, or of
    #: flags and categories, takes it; its flags are one-hot in the path's design); False: only categorical columns,
    #: the baseline it was judged against (``choice-categorical-flags*.md``).
    _categorical_flags = True
    #: What K that path's models are judged by: ``"aic3"`` (3 per parameter) or ``"bic"`` (log N per parameter, the
    #: baseline it was judged against; :data:`model.latent_class.CRITERIA`, ``choice-categorical-aic3*.md``).
    _latent_criterion = "aic3"
    #: What K the BIC path of few design columns judges its mixtures by: ``"bic"`` (log N per parameter) or ``"aic3"``
    #: (3 per parameter; :data:`model.low_dim.PENALTIES`), and by which on a rough table: one with a cell to fill or
    #: a design column of <= 20 values (a filled cell or a level is a point mass no Gaussian draws, and AIC3 fits
    #: them components of their own). Design switches: AIC3 on complete fine tables failed the protocol on a fresh
    #: draw (``benchmarks/choose_low_dim.py``, ``docs/results/choice-low-dim-aic3*.md``; with cells removed,
    #: ``benchmarks/choose_imputation.py``, ``choice-low-dim-aic3-gaps.md``). P(K) is each criterion's
    #: (:data:`model.low_dim.CALIBRATION`).
    _low_dim_criterion = LOW_DIM_CRITERION
    _low_dim_criterion_rough = "bic"
    #: Where that path merges the components that tile one cluster (:data:`model.low_dim.MERGE`); None: BIC's
    #: components are the clusters, the baseline it was judged against (``choice-low-dim-tiles*.md``).
    _low_dim_merge = LOW_DIM_MERGE
    #: Whether that path fits its mixtures (and their k-means++ starts) to the design with every numeric column of few
    #: levels spread over its levels' cells (:func:`model.dequantize.dequantize_rows`), the rows then assigned as
    #: given: a lattice of levels is no comb of point masses for BIC to give components of their own. ``"spread"``:
    #: so, tiles merged as on any design of many-valued columns; ``"spread-unmerged"``: so, tiles merged only where
    #: the levels as given are many-valued (as without spreading); ``"discretized"``: per K the mixture fitted as given
    #: or spread whose likelihood of the rows read as cells is higher, K by BIC on it
    #: (:func:`model.low_dim.discretized_choice`); None: the levels as they are (the default).
    #: ``benchmarks/choose_low_dim_spread.py``: the spreads gained on three draws of ratings (+0.07 to +0.11) and
    #: coarse 2-4 columns (+0.010 to +0.012) but lost where integer codes are the clusters (``level-clusters``, -0.022
    #: to -0.054), and so did ``"discretized"`` (``docs/results/choice-low-dim-spread*.md``): read as cells, a code's
    #: levels are no more apart than a rating's, so only the other columns could tell the two apart.
    _low_dim_spread: str | None = None
    #: With ``n_clusters=None`` and K from the network's rule (not BIC): the ``structure_score_`` above which the
    #: answer is K = 2, the fewest clusters the network reports, whatever larger K the rule chose (a table that
    #: looks like one Gaussian mode split into the two halves k-means would cut, not into many pieces); ``inf``:
    #: never. A design alternative judged on development data (``benchmarks/choose_structure.py --answer two``).
    _two_cluster_z = np.inf
    #: Rows with no value in any usable column (``empty_rows_``): False fills and clusters them as any other row
    #: (at the columns' centre, where in a table of few columns they can gather into a cluster of their own); True
    #: leaves them out of the context and gives them the clusters' shares. A design alternative judged by the
    #: protocol (``benchmarks/choose_imputation.py``, ``*-empty-apart``; ``docs/results/choice-empty-rows-fresh.md``:
    #: level on 5 sets, low-d -0.003 +- 0.003), so not the default.
    _empty_rows_apart = False
    #: Threads of numpy's and scipy's BLAS pools during ``fit`` and the assignment of new rows
    #: (:mod:`model.blas_threads`): 1, since a fit's matrices are small and idle OpenBLAS threads spin on the cores
    #: the network needs; None leaves the pools as they are (the baseline ``benchmarks/bench_blas_threads.py``
    #: times it against). Not a parameter: it changes the time, not the answer.
    _blas_threads = 1

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, None, None, closed="neither"), None],
        "checkpoint": [str, os.PathLike, None],
        "device": [str],
        "random_state": ["random_state"],
        "n_context": [Interval(Integral, 2, None, closed="left")],
        "batch_rows": [Interval(Integral, 1, None, closed="left")],
        "k_selection": [StrOptions(set(ESTIMATOR_K_SELECTIONS))],
        "max_clusters": [Interval(Integral, None, None, closed="neither"), None],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "refine": [StrOptions(set(REFINES))],
        "allow_single_cluster": ["boolean"],
        "single_cluster_z": [Interval(Real, None, None, closed="both")],
        "screen_noise": ["boolean", StrOptions({"auto"})],
        "dequantize": ["boolean"],
        "power_transform": ["boolean"],
        "impute": [StrOptions(set(IMPUTE))],
        "missing_values": ["array-like", None],
    }

    def __init__(self, n_clusters=None, *, checkpoint=None, device="auto", random_state=None, n_context=1000,
                 batch_rows=1024, k_selection=DEFAULT_ESTIMATOR_K_SELECTION, max_clusters=None,
                 n_estimators=DEFAULT_N_ESTIMATORS, refine=DEFAULT_REFINE, allow_single_cluster=False,
                 single_cluster_z=DEFAULT_SINGLE_CLUSTER_Z, screen_noise=DEFAULT_SCREEN_NOISE,
                 dequantize=DEFAULT_DEQUANTIZE, power_transform=DEFAULT_POWER_TRANSFORM, impute=DEFAULT_IMPUTE,
                 missing_values=None):
        self.n_clusters = n_clusters
        self.checkpoint = checkpoint
        self.device = device
        self.random_state = random_state
        self.n_context = n_context
        self.batch_rows = batch_rows
        self.k_selection = k_selection
        self.max_clusters = max_clusters
        self.n_estimators = n_estimators
        self.refine = refine
        self.allow_single_cluster = allow_single_cluster
        self.single_cluster_z = single_cluster_z
        self.screen_noise = screen_noise
        self.dequantize = dequantize
        self.power_transform = power_transform
        self.impute = impute
        self.missing_values = missing_values

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # missing values are imputed
        tags.input_tags.categorical = True
        return tags

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_networks", None)  # reloaded from the checkpoint file on demand
        return state

    # ------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    @_held_blas
    def fit(self, X, y=None):
        """Cluster ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or DataFrame
            At least 2 rows. DataFrame columns of dtype category, object or bool are categorical.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        self : TabClustPFN
            The fitted estimator.
        """
        if self._split_check_kept not in (False, "together", "crossing"):
            raise ValueError(f"_split_check_kept={self._split_check_kept!r}: False, 'together' or 'crossing'")
        frame = as_frame(X)
        n = frame.shape[0]
        if n < 2:
            raise ValueError(f"TabClustPFN needs at least 2 rows to cluster, got n_samples={n}.")
        n_ctx = min(n, self.n_context)  # the rows the partition is computed on
        rows = f"n_samples={n}" if n_ctx == n else f"the context's n_context={n_ctx} rows; raise n_context"
        device = self._resolve_device()
        path = self._checkpoint_path().resolve()  # absolute: predict must find it from any working directory
        net, sha = self._network(path, device)
        k_max = net.cfg.k_max
        if self.n_clusters is not None:
            if not 2 <= self.n_clusters <= k_max:
                raise ValueError(f"n_clusters={self.n_clusters} is outside 2..{k_max} (K_max of the checkpoint); "
                                 "pass n_clusters=None to let the model choose K.")
            if self.n_clusters >= n_ctx:
                raise ValueError(f"n_clusters={self.n_clusters} must be smaller than the number of rows "
                                 f"({rows}).")
        elif n_ctx < 3:  # K is in 2..rows-1
            raise ValueError("choosing K needs at least 3 rows: " + (
                f"got n_samples={n}; pass more rows." if n_ctx == n else
                f"the context has n_context={n_ctx}; raise n_context."))
        check_unique_names(frame)
        k_cap = k_max if self.max_clusters is None else int(self.max_clusters)
        if not 2 <= k_cap <= k_max:
            raise ValueError(f"max_clusters={self.max_clusters} is outside 2..{k_max} (K_max of the checkpoint); "
                             "pass max_clusters=None to allow every K.")
        if self.n_clusters is not None and self.n_clusters > k_cap:
            raise ValueError(f"n_clusters={self.n_clusters} is larger than max_clusters={self.max_clusters}; "
                             "give one of them.")
        rule = self._k_rule(net, path)
        codes = checked_codes(self.missing_values)
        table = without_codes(frame, codes)
        table, spread = dequantize_frame(table) if self.dequantize else (table, [])
        pre = self.preprocessor(net.cfg.max_features, net.cfg.max_categories, codes)
        Z, cat_mask = pre.fit_transform(table)
        empty = pre.empty_rows(table)
        if empty.any() and not self._empty_rows_apart:
            warnings.warn(f"{int(empty.sum())} of the {n} rows have no value in any usable column: they are filled "
                          "at the columns' centre, where they may gather into a cluster of their own (their "
                          "indices: empty_rows_).", UserWarning, stacklevel=user_stacklevel())
        empty_rows = np.flatnonzero(empty)
        empty = empty if self._empty_rows_apart else np.zeros(n, bool)
        held = np.flatnonzero(~empty)
        if empty.any():
            least = 3 if self.n_clusters is None else int(self.n_clusters) + 1
            if len(held) < least:
                what = "choosing K" if self.n_clusters is None else f"n_clusters={self.n_clusters}"
                raise ValueError(f"{int(empty.sum())} of the {n} rows have no value in any usable column, which "
                                 f"leaves {len(held)} to cluster; {what} needs at least {least}: pass rows that "
                                 "hold values.")
            warnings.warn(f"{int(empty.sum())} of the {n} rows have no value in any usable column: they do not shape "
                          "the clusters; each gets the clusters' shares as probabilities and the largest cluster as "
                          "label (their indices: empty_rows_).", UserWarning, stacklevel=user_stacklevel())
        # every refusal is behind us: from here on the fitted attributes are replaced together
        _check_feature_names(self, X, reset=True)
        self.n_features_in_ = frame.shape[1]

        if len(held) <= self.n_context:
            ctx = held
        else:
            rng = check_random_state(self.random_state)
            ctx = held[np.sort(rng.choice(len(held), size=self.n_context, replace=False))]
            logger.info("N=%d > n_context=%d: clustering a random context of %d rows, assigning the rest in "
                        "chunks of %d", n, self.n_context, self.n_context, self.batch_rows)
        self._empty, self._empty_rows = empty, empty_rows
        # whether a cell was filled: only asked where the BIC path's criteria differ (a design switch)
        self._cells_filled = (self._low_dim_criterion != self._low_dim_criterion_rough
                              and bool(pre.absent_cells(table)[held].any()))
        self._cluster(net, Z, cat_mask, ctx, k_cap, rule)
        if pre.screened_:  # columns that differ between the clusters found without them come back
            back = associated_columns(pre.screened_values(table.iloc[ctx]), self.labels_[ctx],
                                      categorical=pre.screened_categorical)
            if back.any():
                pre.readmit(table, [name for name, b in zip(pre.screened_, back) if b])
                Z, cat_mask = pre.transform(table)
                self._cluster(net, Z, cat_mask, ctx, k_cap, rule)
        if self._split_check and pre.screened_categorical.any():
            pre = self._readmit_unless_only_splitting(net, table, pre, ctx, k_cap, rule)
        if self._split_check_kept and self.screen_noise:
            pre = self._set_aside_if_only_splitting(net, table, pre, ctx, k_cap, rule)
        self.preprocessor_ = pre
        self.dequantized_ = spread
        self.k_top_ = None if self._candidates is None else self._candidates.k_hi  # the range _cluster weighed
        self.k_at_top_ = bool(self.k_top_ is not None and self.k_top_ > 2 and self.k_chosen_ == self.k_top_)
        if self.k_at_top_:
            self._warn_k_at_top()
        self._fitted_checkpoint = None if self.checkpoint is None else path  # None: the shipped weights
        self._fitted_sha = sha
        return self

    def _warn_k_at_top(self) -> None:
        """The :class:`KRangeWarning` of a K chosen at ``k_top_`` (the class docstring's Notes)."""
        k_top = self.k_top_
        p = (self.k_probabilities_ or {}).get(k_top)
        warnings.warn(f"K = {k_top}, the most clusters this fit considers (K = 2..{k_top}): the table may hold more "
                      "clusters, or none; tables without cluster structure (a round cloud; independent uniform, "
                      "skewed or few-level columns) often end at the top. "
                      + ("" if p is None else f"k_probabilities_ puts {p:.2f} on it. ")
                      + "Give n_clusters if the number is known; allow_single_cluster=True tests for one cluster.",
                      KRangeWarning, stacklevel=user_stacklevel())

    def preprocessor(self, max_features: int = 64, max_categories: int = 16, missing_values: tuple = ()
                     ) -> TablePreprocessor:
        """The unfitted :class:`TablePreprocessor` a fit uses, with this estimator's settings (``max_features`` and
        ``max_categories``: the network's; ``missing_values``: the codes read as missing, checked)."""
        return TablePreprocessor(max_features=max_features, max_categories=max_categories,
                                 screen_noise=self.screen_noise, power_transform=self.power_transform,
                                 power_min_skewness=self._power_min_skewness,
                                 power_keep_modes=self._power_keep_modes, power_min_width=self._power_min_width,
                                 screen_categorical=self._screen_categorical,
                                 screen_categorical_alpha=self._screen_categorical_alpha,
                                 screen_binary=self._screen_binary, screen_levels=self._screen_levels,
                                 screen_levels_min_width=self._screen_levels_min_width,
                                 impute=self.impute,
                                 impute_categorical=self._impute_categorical,
                                 impute_average_gaps=self._impute_average_gaps, clip_fences=self._clip_fences,
                                 fence_max_share=self._fence_max_share, missing_values=missing_values)

    def _readmit_unless_only_splitting(self, net: TabClustNet, table: pd.DataFrame, pre: TablePreprocessor,
                                       ctx: np.ndarray, k_cap: int, rule: str) -> TablePreprocessor:
        """The screened categorical columns back, unless they only split the clusters found without them
        (:func:`model.screening.only_splits`, on the context): the table is clustered again with them. A category
        that is noise splits every cluster by its levels; one that carries the clusters is matched by them. Returns
        the preprocessor of the partition kept (``pre`` itself when the columns stay out)."""
        categorical = pre.screened_categorical
        names = [name for name, c in zip(pre.screened_, categorical) if c]
        codes = pre.screened_values(table.iloc[ctx])[:, categorical]  # the levels as the preprocessor reads them
        without = self.labels_[ctx]
        fitted = dict(self.__dict__)
        trial = copy.deepcopy(pre).readmit(table, names)
        Z, cat_mask = trial.transform(table)
        self._cluster(net, Z, cat_mask, ctx, k_cap, rule)
        if not only_splits(self.labels_[ctx], without, codes):
            return trial
        self.__dict__.update(fitted)
        return pre

    def _set_aside_if_only_splitting(self, net: TabClustNet, table: pd.DataFrame, pre: TablePreprocessor,
                                     ctx: np.ndarray, k_cap: int, rule: str) -> TablePreprocessor:
        """The kept categorical columns and 0/1 flags of a table that has other columns too, set aside where they
        only split the clusters found without them (:func:`model.screening.only_splits`, on the context: the test
        :meth:`_readmit_unless_only_splitting` puts a screened category to, strict where ``_split_check_kept`` is
        ``"crossing"``): the table is clustered again without them. A sex beside species, a year beside regions:
        such a column depends on the numeric columns through the clusters' shapes, so the noise screening keeps it,
        and then every cluster is split by its levels. Returns the preprocessor of the partition kept (``pre``
        itself when the columns stay)."""
        if pre.components_ is not None:  # past max_features the design is principal components, not columns
            return pre
        Z, cat_mask = pre.transform(table.iloc[ctx])
        flags = np.isfinite(flag_cuts(Z, cat_mask))
        aside = cat_mask | flags
        if not aside.any() or aside.all():
            return pre
        with_them, strict = self.labels_[ctx], self._split_check_kept == "crossing"
        if not could_only_split(with_them, Z[:, aside], strict=strict):  # no need to cluster without them
            return pre
        names = [c.name for c, a in zip(pre.columns_, aside) if a]
        fitted = dict(self.__dict__)
        trial = copy.deepcopy(pre).set_aside(table, names, "only splits the clusters found without it",
                                             flags=tuple(c.name for c, f in zip(pre.columns_, flags) if f))
        Z_without, cat_mask_without = trial.transform(table)
        self._cluster(net, Z_without, cat_mask_without, ctx, k_cap, rule)
        if only_splits(with_them, self.labels_[ctx], Z[:, aside], strict=strict):
            return trial
        self.__dict__.update(fitted)
        return pre

    def _cluster(self, net: TabClustNet, Z: np.ndarray, cat_mask: np.ndarray, ctx: np.ndarray, k_cap: int,
                 rule: str) -> None:
        """Cluster the preprocessed table ``Z`` (its context rows ``ctx``): every fitted attribute but the
        preprocessor's and the checkpoint's."""
        n, n_ctx, k_max = Z.shape[0], len(ctx), net.cfg.k_max
        k_hi = min(k_cap, n_ctx - 1)
        test_structure = self.n_clusters is None and (self.allow_single_cluster or self._two_cluster_z < np.inf)
        refined_candidates = self.refine in REFINED_CANDIDATES
        if refined_candidates or test_structure:  # the context in the design space (categorical codes one-hot)
            self._widths = one_hot_widths(Z, cat_mask)
            rows = design(Z[ctx], cat_mask, self._widths)
        # K by BIC of full-covariance mixtures (model.low_dim) on tables of few design columns; started from
        # k-means++ partitions there, the network is not run at all
        defaults = self.n_clusters is None and self.k_selection == "auto" and self.refine == "gmm"
        # K by AIC3 of latent class models (model.latent_class) on tables of categories only (numeric 0/1 flags
        # among them with _categorical_flags), in a design of their own: every flag one-hot too; a design of at
        # most LOW_DIM_MAX_WIDTH columns (the only kind the choice never met) stays on the BIC path below
        latent = defaults and self._categorical_path is not None and rows.shape[1] > LOW_DIM_MAX_WIDTH
        cuts = flag_cuts(Z[ctx], cat_mask) if latent and self._categorical_flags else np.full(Z.shape[1], np.nan)
        latent = latent and bool((cat_mask | np.isfinite(cuts)).all())
        self._latent_design = None
        if latent:
            latent_mask = cat_mask | np.isfinite(cuts)
            latent_widths = one_hot_widths(flags_recoded(Z, cuts), latent_mask)
            self._latent_design = (cuts, latent_mask, latent_widths)
            latent_rows = design(flags_recoded(Z[ctx], cuts), latent_mask, latent_widths)
        bic_path = defaults and not latent and rows.shape[1] <= LOW_DIM_MAX_WIDTH
        fit_rows = rows if bic_path else None  # the rows the BIC path fits its mixtures to
        if bic_path and self._low_dim_spread not in LOW_DIM_SPREADS:
            raise ValueError(f"_low_dim_spread must be one of {LOW_DIM_SPREADS}, got {self._low_dim_spread!r}")
        spread_rows, spread_columns = None, None
        if bic_path and self._low_dim_spread:
            numeric = numeric_columns(rows.shape[1], one_hot_blocks(cat_mask, self._widths))
            spread_rows, spread_columns = dequantize_rows(rows, numeric)
            if self._low_dim_spread != "discretized":
                fit_rows = spread_rows
        if latent and self._categorical_path == "kmeans":
            self._orders, context, posterior, perms = [], None, None, None
            candidates, refined = kmeans_starts(latent_rows, k_hi), None
        elif bic_path and self._low_dim_starts == "kmeans":
            self._orders, context, posterior, perms = [], None, None, None
            candidates, refined = kmeans_starts(fit_rows, k_hi), None
        else:
            self._orders = column_orderings(Z.shape[1], self.n_estimators)  # kept for predict
            context = net.open_context(Z[ctx], cat_mask, self._orders)
            member_probs, member_posteriors = context.probs, context.posterior
            probs_all, posterior, perms = combine_members(member_probs, member_posteriors)
            candidates, refined = None, [None] * len(posterior)
        if refined_candidates and context is not None:
            if self.n_clusters is None:  # every candidate K the rule may choose
                candidates, refined = refine_candidates(rows, probs_all, n_candidates=k_hi - 1)
            else:
                candidates = probs_all.argmax(-1)
                c = int(self.n_clusters) - 2
                candidates[c], refined[c] = lloyd(rows, probs_all[c, :, : c + 2])
        low_dim = None
        if bic_path:
            criterion = self._low_dim_criterion
            if criterion != self._low_dim_criterion_rough and (self._cells_filled or not fine_columns(rows).all()):
                criterion = self._low_dim_criterion_rough
            merge = self._low_dim_merge
            if self._low_dim_spread == "spread-unmerged" and not fine_columns(rows).all():
                merge = None
            rule, low_dim = "bic", choose_low_dim(fit_rows, candidates, k_hi, criterion, merge=merge)
            if self._low_dim_spread == "discretized" and spread_columns.any():  # as given or spread, by cell mass
                spread = choose_low_dim(spread_rows, kmeans_starts(spread_rows, k_hi), k_hi, criterion, merge=None)
                low_dim = discretized_choice(rows, spread_columns, low_dim, spread)
        elif latent:
            starts = {k: [candidates[k - 2]] for k in range(2, k_hi + 1)}
            if self._categorical_path == "both":
                for k, start in zip(range(2, k_hi + 1), kmeans_starts(latent_rows, k_hi)):
                    starts[k].append(start)
            rule = "latent-class"
            low_dim = choose_latent_class(latent_rows, one_hot_blocks(latent_mask, latent_widths), starts,
                                          criterion=self._latent_criterion)
        mixtures = None  # each candidate's diagonal mixture (refine="gmm"), where the ranker's features fitted them
        k_probs = None
        if low_dim is not None:  # the network's own rules are not needed: BIC's scores and probabilities
            k_auto, scores, k_probs = low_dim.k, np.full(k_max - 1, -np.inf), np.zeros(k_max - 1)
            scores[low_dim.ks - 2], k_probs[low_dim.ks - 2] = low_dim.scores, low_dim.probabilities
        else:
            k_auto, scores = select_k(probs_all, posterior, k_hi=k_hi, rule=DEFAULT_K_SELECTION if rule == "ranker"
                                      else rule, members=(member_probs, member_posteriors), candidates=candidates)
        if rule == "ranker" and self.n_clusters is None:
            ranked = np.full_like(scores, -np.inf)
            features, mixtures = ranker_features(
                rows, candidates, probs_all, posterior, (member_probs, member_posteriors), k_hi,
                stage=net.cfg.k_ranker_candidates, with_mixture="mix_ll" in FEATURE_SETS[net.k_ranker.feature_set],
                blocks=one_hot_blocks(cat_mask, self._widths), scores=scores,
                with_agreement="agree" in FEATURE_SETS[net.k_ranker.feature_set])
            k_auto, ranked[: k_hi - 1] = net.k_ranker.choose(features)
            scores = ranked
            if net.cfg.k_ranker_temperature > 0:  # a calibrated ranker: probabilities over K
                temperature = table_temperature(net.cfg.k_ranker_temperature, net.cfg.k_ranker_temperature_slope,
                                                distinct_fraction(Z[ctx], cat_mask))
                k_probs = np.zeros(k_max - 1)
                k_probs[: k_hi - 1] = k_probabilities(ranked[: k_hi - 1], temperature)
                if self._ranker_decision == "expected_ari":  # the Bayes choice for the ARI under them
                    k_auto = int(np.argmax(expected_ari(candidates[: k_hi - 1], k_probs[: k_hi - 1]))) + 2
                elif self._ranker_decision.startswith("smallest-"):  # the fewest clusters nearly as probable
                    share = float(self._ranker_decision.removeprefix("smallest-"))
                    k_auto = int(np.flatnonzero(k_probs >= share * k_probs.max())[0]) + 2
        self.structure_score_ = float("nan")
        if test_structure:
            two = candidates[0] if candidates is not None else probs_all[0].argmax(-1)
            self.structure_score_ = structure_test(rows, two).z
            if low_dim is None and k_auto > 2 and self.structure_score_ > self._two_cluster_z:
                k_auto = 2  # one mode: the two halves, not many pieces
        k = k_auto if self.n_clusters is None else int(self.n_clusters)
        # member j's clusters at K onto member 0's, for the other rows (None: no network, the mixture assigns them)
        self._perms = None if perms is None else perms[:, k - 2, :k]
        self._centroids: Centroids | DiagonalMixture | FullMixture | MergedMixture | None = (
            None if refined is None else refined[k - 2])
        if low_dim is not None:  # the mixture BIC chose
            self._centroids = low_dim.mixture
        elif self.refine == "gmm":  # the chosen candidate, refined again by a Gaussian mixture
            self._centroids = mixture_refinement(rows, candidates[k - 2], k,
                                                 None if mixtures is None else mixtures[k - 2])[1]
        if test_structure and self.allow_single_cluster:
            if self.structure_score_ > self.single_cluster_z:  # one mode: every row to the one mean
                k, self._perms = 1, None if perms is None else perms[:, 0, :1]
                self._centroids = Centroids(rows.mean(0, keepdims=True), max(float(rows.var(0).mean()), 1e-12))
        if self._centroids is not None:  # every row to the nearest refined mean, the context's as refined
            P = self._refined_proba(Z, cat_mask)
        else:
            P = np.empty((n, k), np.float64)
            P[ctx] = probs_all[k - 2, :, :k]
            if n > len(ctx):
                rest = np.setdiff1d(np.arange(n), ctx, assume_unique=True)
                P[rest] = self._assign(context, Z[rest], k)

        # rows with no value (fit's empty_rows_): the clusters' shares, as the mixture says of a row it sees nothing of
        self._shares = P[~self._empty].mean(axis=0)
        P[self._empty] = self._shares
        self.k_chosen_ = k
        self._k_components, self._kept = k, None  # the partition's components; those kept (None: all)
        if self.n_clusters is None and k > 2:
            used = np.unique(P.argmax(axis=1))
            if 2 <= len(used) < k:  # a component the chosen partition left empty is not a cluster found
                self._kept, k = used, len(used)
                P = self._kept_columns(P)
        raw = P.argmax(axis=1)
        first_seen = np.unique(raw, return_index=True)
        order = list(first_seen[0][np.argsort(first_seen[1])])
        perm = np.array(order + [c for c in range(k) if c not in order])  # new column j = old column perm[j]
        self._relabel = np.argsort(perm)  # old cluster -> new label
        self.labels_ = self._relabel[raw].astype(np.int64)
        self.probabilities_ = P[:, perm]
        self.n_clusters_ = k
        self.k_selection_ = "given" if self.n_clusters is not None else rule
        self.k_posterior_ = (None if posterior is None else
                             {kk: float(p) for kk, p in zip(range(2, k_max + 1), posterior)})
        self.k_scores_ = {kk: float(v) for kk, v in zip(range(2, k_max + 1), scores)}
        self.k_probabilities_ = (None if k_probs is None else
                                 {kk: float(p) for kk, p in zip(range(2, k_max + 1), k_probs)})
        self.n_estimators_ = len(self._orders)
        self.context_indices_ = ctx
        self.empty_rows_ = self._empty_rows
        self._context_X, self._cat_mask = Z[ctx], cat_mask
        self._candidates = None if self.n_clusters is not None else _Candidates(
            k_hi, rows if refined_candidates or test_structure else None, candidates, refined, mixtures, low_dim, perms,
            None if context is None else probs_all.argmax(-1))

    def _k_rule(self, net: TabClustNet, path: Path) -> str:
        """``k_selection`` with ``"auto"`` resolved; refuses a ranker the checkpoint or the settings cannot give."""
        has_ranker = net.k_ranker is not None
        if self.k_selection == "ranker":
            if not has_ranker:
                raise ValueError(f"k_selection='ranker' needs a checkpoint with a K ranker, and {path.name} has none: "
                                 "fit one with jobs/fit_k_ranker.py, or pass k_selection='auto' or "
                                 "'expected_ari'.")
            if self.refine not in REFINED_CANDIDATES:
                raise ValueError(f"k_selection='ranker' picks among refined candidates: it needs refine='kmeans' or "
                                 f"'gmm', got refine={self.refine!r}; pass k_selection='auto' or 'expected_ari'.")
        return resolve_k_selection(self.k_selection, has_ranker, self.refine)

    # -------------------------------------------------------- predict
    def predict(self, X, n_clusters=None):
        """Assign new rows to the fitted clusters (the fitted context and K; new rows do not affect each other).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_) or DataFrame
            Same columns as in ``fit``.
        n_clusters : int, optional
            Another K to read, where ``fit`` chose K: the partition at that K that the fit weighed (its candidate,
            refined as the fit would have refined it had it chosen that K), with no second pass of the network
            where the partition was refined (the default). Its clusters are numbered by their first row in the
            fitted context. None: the fitted K.

        Returns
        -------
        labels : ndarray of int64, shape (n_samples,)
            The argmax of :meth:`predict_proba`, numbered as ``labels_`` (at the fitted K).
        """
        P, perm, other_k = self._assign_new(X, n_clusters)  # checks the fit first
        if other_k:  # ties to the lower label, as predict_proba's argmax
            return P[:, perm].argmax(axis=1).astype(np.int64)
        return np.argsort(perm)[P.argmax(axis=1)].astype(np.int64)  # as labels_ breaks ties

    def predict_proba(self, X, n_clusters=None):
        """Soft assignment of new rows to the fitted clusters (the fitted context and K), as ``probabilities_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_) or DataFrame
            Same columns as in ``fit``.
        n_clusters : int, optional
            Another K to read, as in :meth:`predict`.

        Returns
        -------
        proba : ndarray of float64, shape (n_samples, n_clusters_) (n_clusters columns when given)
            Each row sums to 1; column j is cluster j of ``labels_`` and of :meth:`predict`. For n_samples <=
            n_context, ``predict_proba(X)`` on the fitted rows reproduces ``probabilities_``.
        """
        P, perm, _ = self._assign_new(X, n_clusters)  # checks the fit first
        return P[:, perm]

    @_held_blas
    def _assign_new(self, X, n_clusters=None) -> tuple[np.ndarray, np.ndarray, bool]:
        """The soft assignment of new rows (n_samples, components), its components in the fit's order, the
        permutation that numbers them (``P[:, perm]``: column j is label j), and whether it is at another K than
        the fitted one."""
        check_is_fitted(self)
        self._validate_params()  # set_params may have changed them since fit
        k = self._other_k(n_clusters)
        check_unique_names(X)
        _check_feature_names(self, X, reset=False)
        frame = as_frame(X)
        if frame.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {frame.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        Z, _ = self.preprocessor_.transform(frame)
        if k is not None:
            return (*self._assign_at(Z, k), True)
        P = self._assign_rows(Z)
        shares = getattr(self, "_shares", None)  # None: fitted before empty rows were set apart
        if shares is not None and self._empty_rows_apart:
            P[self.preprocessor_.empty_rows(frame)] = self._kept_columns(shares[None])[0]
        return P, np.argsort(self._relabel), False

    def _other_k(self, n_clusters) -> int | None:
        """``predict``'s ``n_clusters`` checked: None where it asks for the fitted K, else the other K."""
        if n_clusters is None:
            return None
        if isinstance(n_clusters, (bool, np.bool_)) or not isinstance(n_clusters, Integral):
            raise ValueError(f"n_clusters must be an integer K, got {n_clusters!r}")
        k = int(n_clusters)
        if k == self.k_chosen_:
            return None
        candidates = getattr(self, "_candidates", None)
        if candidates is None:
            raise ValueError(f"this fit was given n_clusters={self.n_clusters}, so it holds no partition at another "
                             f"K; fit with n_clusters=None (K chosen) to read every K's, or fit again with "
                             f"n_clusters={k}.")
        if not 2 <= k <= candidates.k_hi:
            raise ValueError(f"n_clusters={k} is outside the K this fit weighed (2..{candidates.k_hi}); pass one of "
                             "those, or fit again with n_clusters.")
        return k

    def _assign_at(self, Z: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``Z`` assigned to the partition at candidate K = ``k`` (``_other_k``), and the permutation that
        numbers its components by their first row in the context."""
        c = self._candidates
        if c.bic is not None:  # BIC's own mixture at that K
            centroids = c.bic.mixtures[k]
        elif self.refine == "gmm":  # as fit refines a chosen candidate
            centroids = mixture_refinement(c.rows, c.labels[k - 2], k,
                                           None if c.mixtures is None else c.mixtures[k - 2])[1]
        elif self.refine == "kmeans":
            centroids = c.refined[k - 2]  # None where the network's partition was kept
        else:
            centroids = None
        if centroids is not None:
            P = self._refined_proba(Z, self._cat_mask, centroids)
            first = self._refined_proba(self._context_X, self._cat_mask, centroids).argmax(axis=1)
        else:  # the network assigns, its orderings matched at that K
            net, sha = self._network(default_checkpoint_path() if self._fitted_checkpoint is None
                                     else self._fitted_checkpoint, self._resolve_device())
            if sha != self._fitted_sha:
                raise ValueError("the checkpoint is not the one fitted with: it changed since fit; fit again.")
            context = net.open_context(self._context_X, self._cat_mask, self._orders)
            P = self._assign(context, Z, k, c.perms[:, k - 2, :k])
            first = c.network_labels[k - 2]
        seen, where = np.unique(first, return_index=True)
        order = list(seen[np.argsort(where)])
        return P, np.array(order + [j for j in range(k) if j not in order])

    def _assign_rows(self, Z: np.ndarray) -> np.ndarray:
        """``_assign_new``'s soft assignment of the preprocessed rows ``Z``."""
        if self._centroids is not None:  # refined: the nearest refined mean, no network needed
            return self._kept_columns(self._refined_proba(Z, self._cat_mask))
        device = self._resolve_device()
        # the shipped weights are looked up where this copy of the package has them (a pickled estimator may be
        # loaded elsewhere); the digest check below catches different weights either way
        path = default_checkpoint_path() if self._fitted_checkpoint is None else self._fitted_checkpoint
        net, sha = self._network(path, device)
        if sha != self._fitted_sha:
            raise ValueError(f"the checkpoint {path} is not the one fitted with (weights sha256 {sha[:12]} != "
                             f"{self._fitted_sha[:12]}): it changed since fit; fit again.")
        context = net.open_context(self._context_X, self._cat_mask, self._orders)
        return self._kept_columns(self._assign(context, Z, self._k_components))

    # -------------------------------------------------------- helpers
    def _resolve_device(self) -> torch.device:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            device = torch.device(self.device)
        except (RuntimeError, ValueError) as exc:
            raise ValueError(f"device={self.device!r} is not a torch device; use 'auto', 'cpu' or 'cuda'.") from exc
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device={self.device!r} but CUDA is not available; use device='cpu' or 'auto'.")
        return device

    def _checkpoint_path(self) -> Path:
        if self.checkpoint is not None:
            return Path(self.checkpoint)
        path = default_checkpoint_path()
        if not path.is_file():
            raise FileNotFoundError(f"no shipped checkpoint at {path}; pass checkpoint='path/to/model.pt' "
                                    "(a file written by model.checkpoint.save_checkpoint, e.g. by pretraining).")
        return path

    def _network(self, path: Path, device: torch.device) -> tuple[TabClustNet, str]:
        """The network of ``path`` on ``device``, cached in this instance per (path, mtime, device)."""
        try:
            mtime = path.stat().st_mtime_ns
        except OSError:
            mtime = None  # load_checkpoint raises the clear error
        key = (str(path.resolve()), mtime, str(device))
        cache = self.__dict__.setdefault("_networks", {})
        if key not in cache:
            cache.clear()  # keep at most one network alive
            net, _ = load_checkpoint(path, map_location=device)
            cache[key] = (net, weights_sha256(net.state_dict()))
        return cache[key]

    def _refined_proba(self, Z: np.ndarray, cat_mask: np.ndarray, centroids=None) -> np.ndarray:
        """Soft assignment (n, components) of preprocessed rows to the refined means (``centroids``, default the
        fitted ones), ``batch_rows`` at a time (bounds the one-hot design's memory)."""
        centroids = self._centroids if centroids is None else centroids
        cuts, widths = None, self._widths
        if isinstance(centroids, CategoricalMixture):  # the latent class path's own design (flags one-hot)
            cuts, cat_mask, widths = self._latent_design
        out = np.empty((len(Z), centroids.means.shape[0]), np.float64)
        for start in range(0, len(Z), self.batch_rows):
            block = Z[start : start + self.batch_rows]
            block = design(block if cuts is None else flags_recoded(block, cuts), cat_mask, widths)
            out[start : start + len(block)] = centroids.probabilities(block)
        return out

    def _kept_columns(self, P: np.ndarray) -> np.ndarray:
        """The soft assignment ``P`` (n, components) over the kept components only, renormalised (a row with no
        mass on any of them: uniform over them); ``P`` itself when every component was kept."""
        if self._kept is None:
            return P
        Q = P[:, self._kept]
        total = Q.sum(axis=1, keepdims=True)
        return np.divide(Q, total, out=np.full_like(Q, 1.0 / Q.shape[1]), where=total > 0)

    def _assign(self, context: ContextInference, X_rows: np.ndarray, k: int, perms: np.ndarray | None = None
                ) -> np.ndarray:
        """Soft assignment (m, k) of ``X_rows`` as non-context rows of ``context``, ``batch_rows`` rows per pass,
        every member's clusters matched to the first's (``perms``, default the fitted K's ``self._perms``) and
        averaged."""
        return average_matched(context.assign(X_rows, k, self.batch_rows), self._perms if perms is None else perms)
