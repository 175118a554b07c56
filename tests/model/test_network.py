"""Network invariances, masking, gradient routing and the decoder/CIN variants."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from model import ModelConfig, TabClustNet
from model.batching import collate, to_torch
from model.layers import MAB, CompetitiveMAB
from model.objective import ObjectiveConfig, compute_losses


class _Task:
    def __init__(self, X, y, k, categorical=()):
        self.X, self.y, self.n_clusters, self.categorical = X, y, k, categorical


def _task(seed, n, d, k, categorical=()):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g).numpy()
    for j in categorical:
        X[:, j] = torch.randint(0, 4, (n,), generator=g).numpy()
    y = torch.randint(0, k, (n,), generator=g).numpy()
    return _Task(X, y, k, categorical)


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return TabClustNet(ModelConfig.preset("tiny")).eval()


def _infer(net, batch):
    t = to_torch(batch)
    with torch.no_grad():
        return net.infer(t["X"], t["row_mask"], t["col_mask"], t["cat_mask"])


def test_output_shapes_and_probabilities(net):
    out = _infer(net, collate([_task(0, 30, 4, 3)]))
    k_max = net.cfg.k_max
    assert out.probs.shape == (1, k_max - 1, 30, k_max) and out.k_logits.shape == (1, k_max - 1)
    for c in range(k_max - 1):
        p = out.probs[0, c]
        assert torch.allclose(p.sum(-1), torch.ones(30), atol=1e-5)
        assert torch.all(p[:, c + 2:] == 0)


def test_pin_is_row_permutation_equivariant_and_cin_invariant(net):
    task = _task(1, 40, 5, 3, categorical=(2,))
    perm = torch.randperm(40, generator=torch.Generator().manual_seed(3)).numpy()
    out = _infer(net, collate([task]))
    out_p = _infer(net, collate([_Task(task.X[perm], task.y[perm], 3, (2,))]))
    assert torch.allclose(out.probs[:, :, perm], out_p.probs, atol=1e-5)
    assert torch.allclose(out.k_logits, out_p.k_logits, atol=1e-5)


def test_a_dataset_gives_the_same_output_alone_or_padded_in_a_batch(net):
    small = _task(2, 25, 3, 2, categorical=(0,))
    big = _task(3, 60, 7, 5)
    alone = _infer(net, collate([small]))
    batched = _infer(net, collate([big, small]))
    assert torch.allclose(batched.probs[1, :, :25], alone.probs[0], atol=1e-5)
    assert torch.all(batched.probs[1, :, 25:] == 0)
    assert torch.allclose(batched.k_logits[1], alone.k_logits[0], atol=1e-5)


def test_a_float64_network_computes_in_float64_and_pads_exactly():
    """The cosine head, the farthest-point seeds and CIN's Gram matrices raise bf16 to float32 but used to lower
    float64 to it too, so a float64 copy of the network failed in CIN (float32 fingerprint, float64 weights). In
    float64 a table padded in a batch gets its own outputs to rounding, which float32 (1e-5) cannot show."""
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny", proto_seeding=True)).eval()
    net64 = TabClustNet(net.cfg).double().eval()
    net64.load_state_dict(net.state_dict())
    small, big = _task(2, 25, 3, 2, categorical=(0,)), _task(3, 60, 7, 5)
    t = to_torch(collate([small]))
    with torch.no_grad():
        out32 = net.infer(t["X"], t["row_mask"], t["col_mask"], t["cat_mask"])
        alone = net64.infer(t["X"].double(), t["row_mask"], t["col_mask"], t["cat_mask"])
        b = to_torch(collate([big, small]))
        batched = net64.infer(b["X"].double(), b["row_mask"], b["col_mask"], b["cat_mask"])
    assert alone.probs.dtype == alone.k_logits.dtype == torch.float64
    torch.testing.assert_close(alone.probs.float(), out32.probs, rtol=0, atol=1e-4)
    torch.testing.assert_close(alone.k_logits.float(), out32.k_logits, rtol=0, atol=1e-4)
    torch.testing.assert_close(batched.probs[1, :, :25], alone.probs[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(batched.k_logits[1], alone.k_logits[0], rtol=0, atol=1e-12)


def test_non_context_rows_are_assigned_independently_of_each_other(net):
    task = _task(4, 50, 4, 3)
    t = to_torch(collate([task]))
    ctx = torch.zeros(1, 50, dtype=torch.bool)
    ctx[:, :30] = True
    with torch.no_grad():
        full = net.infer(t["X"], t["row_mask"], t["col_mask"], t["cat_mask"], ctx)
        ctx_only = net.infer(t["X"][:, :30], t["row_mask"][:, :30], t["col_mask"], t["cat_mask"])
        # drop half of the query rows: the others keep their output
        keep = torch.cat([torch.arange(30), torch.arange(30, 50, 2)])
        part = net.infer(t["X"][:, keep], t["row_mask"][:, keep], t["col_mask"], t["cat_mask"], ctx[:, keep])
    assert torch.allclose(full.probs[:, :, :30], ctx_only.probs, atol=1e-5)
    assert torch.allclose(full.k_logits, ctx_only.k_logits, atol=1e-5)
    assert torch.allclose(full.probs[:, :, keep], part.probs, atol=1e-5)


def _train_batch():
    return to_torch(collate([_task(5, 40, 4, 3, categorical=(1,)), _task(6, 30, 6, 4)]))


def test_gradients_reach_every_pin_parameter():
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny"))
    from model.objective import pin_loss_value
    b = _train_batch()
    o = net(b["X"], b["row_mask"], b["col_mask"], b["cat_mask"], n_clusters=b["n_clusters"])
    pin_loss_value("soft_ari", o.logits, b["y"], b["row_mask"]).backward()
    missing = [n for n, p in net.named_parameters()
               if not n.startswith("cin.") and (p.grad is None or p.grad.abs().sum() == 0)]
    assert missing == []


def test_decoupled_cin_loss_produces_no_gradient_in_pin():
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny"))
    b = _train_batch()
    from model.losses import cin_ce_loss
    o = net(b["X"], b["row_mask"], b["col_mask"], b["cat_mask"], n_clusters=b["n_clusters"], detach_cin=True)
    cin_ce_loss(o.k_logits, b["n_clusters"]).backward()
    pin_grads = [p.grad for n, p in net.named_parameters() if not n.startswith("cin.")]
    assert all(g is None or g.abs().sum() == 0 for g in pin_grads)
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for n, p in net.named_parameters()
               if n.startswith("cin.mlp.0"))
    net.zero_grad()
    o = net(b["X"], b["row_mask"], b["col_mask"], b["cat_mask"], n_clusters=b["n_clusters"], detach_cin=False)
    cin_ce_loss(o.k_logits, b["n_clusters"]).backward()
    assert net.decoder.prototypes.grad is not None and net.decoder.prototypes.grad.abs().sum() > 0


@pytest.mark.parametrize("decoder", ["iterative", "transformer", "naive"])
@pytest.mark.parametrize("cin_head", ["categorical", "ordinal"])
@pytest.mark.parametrize("pin_loss", ["soft_ari", "soft_nmi", "matching_ce", "matching_softacc"])
def test_every_variant_trains_one_step(decoder, cin_head, pin_loss):
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny", decoder=decoder, cin_head=cin_head))
    out = compute_losses(net, _train_batch(), ObjectiveConfig(pin_loss=pin_loss, warmup_matching_steps=0), step=1)
    out["loss"].backward()
    assert torch.isfinite(out["loss"])
    assert all(torch.isfinite(p.grad).all() for p in net.parameters() if p.grad is not None)


def test_ordinal_head_gives_a_distribution_over_k():
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny", cin_head="ordinal")).eval()
    out = _infer(net, collate([_task(7, 30, 3, 3)]))
    assert torch.allclose(out.k_logits.exp().sum(-1), torch.ones(1), atol=1e-5)


def test_config_round_trip_and_refusals():
    cfg = ModelConfig.preset("small")
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown ModelConfig keys"):
        ModelConfig.from_dict({**cfg.to_dict(), "bogus": 1})
    with pytest.raises(ValueError, match="unknown preset"):
        ModelConfig.preset("huge")
    with pytest.raises(ValueError, match="decoder"):
        dataclasses.replace(cfg, decoder="mlp")
    assert ModelConfig.preset("paper").d_model == 512


@pytest.mark.parametrize("pin_weight,cin_weight,trained", [(1.0, 0.0, "pin"), (0.0, 1.0, "cin")])
def test_single_head_phases_train_only_their_part(pin_weight, cin_weight, trained):
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny"))
    objective = ObjectiveConfig(pin_weight=pin_weight, cin_weight=cin_weight, warmup_matching_steps=0)
    assert objective.heads == trained
    compute_losses(net, _train_batch(), objective, step=1)["loss"].backward()
    has = {n: p.grad is not None and bool(p.grad.abs().sum() > 0) for n, p in net.named_parameters()}
    cin_trained = any(v for n, v in has.items() if n.startswith("cin."))
    pin_trained = any(v for n, v in has.items() if not n.startswith("cin."))
    assert (pin_trained, cin_trained) == (trained == "pin", trained == "cin")


def test_objective_refuses_to_train_nothing():
    with pytest.raises(ValueError, match="cannot both be 0"):
        ObjectiveConfig(pin_weight=0.0, cin_weight=0.0)


def test_cin_phase_reports_the_same_partition_as_the_pin_phase_on_a_padded_batch():
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny")).eval()
    b = _train_batch()  # two tasks of different N: the second is padded
    with torch.no_grad():
        pin = compute_losses(net, b, ObjectiveConfig(cin_weight=0.0, warmup_matching_steps=0), step=1)
        cin = compute_losses(net, b, ObjectiveConfig(pin_weight=0.0, warmup_matching_steps=0), step=1)
    assert torch.allclose(pin["soft_ari"], cin["soft_ari"], atol=1e-5)


def test_value_skip_makes_the_initial_row_representation_an_isometry_of_the_numeric_values():
    torch.manual_seed(0)
    # codes orthonormal: 16 <= d_model; the categorical column's own skip is off to isolate the numeric one
    net = TabClustNet(ModelConfig.preset("tiny", max_features=16, cat_skip=False)).eval()
    assert net.cfg.value_skip
    with torch.no_grad():
        net.encoder.rows.cls_gate.zero_()  # only the skip path remains
    task = _task(3, 40, 6, 3, categorical=(5,))
    t = to_torch(collate([task]))
    with torch.no_grad():
        R = net.encode(t["X"], t["row_mask"], t["col_mask"], t["cat_mask"])[0]
    numeric = torch.as_tensor(task.X[:, :5])
    dist = lambda Z: (Z[:, None] - Z[None]).pow(2).sum(-1).sqrt()  # noqa: E731  (exact, unlike cdist)
    assert torch.allclose(dist(R), dist(numeric.float()), atol=1e-4)


def test_checkpoint_configs_from_before_the_value_skip_load_without_it():
    data = ModelConfig.preset("small").to_dict()
    del data["value_skip"]
    cfg = ModelConfig.from_dict(data)
    assert not cfg.value_skip and not hasattr(TabClustNet(cfg).encoder.rows, "cls_gate")


def test_attention_in_batch_slices_equals_one_call():
    from model.layers import _attention

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(7, 2, 5, 4, generator=g) for _ in range(3))
    mask = torch.rand(7, 1, 1, 5, generator=g) > 0.3
    mask[:, ..., 0] = True
    assert torch.allclose(_attention(q, k, v, mask, max_batch=3), _attention(q, k, v, mask), atol=1e-6)


@pytest.mark.parametrize("masked", [False, True])
def test_few_queries_attention_equals_the_fused_kernel_and_reads_zeros_where_no_key_is_allowed(masked):
    """The CPU path for few queries over many keys (two matrix products) gives what scaled_dot_product_attention
    gives, masked keys and a query set with no key left included, with and without gradients."""
    import torch.nn.functional as F

    from model.layers import _FEW_QUERIES_MIN_KEYS, FEW_QUERIES, _attention

    g = torch.Generator().manual_seed(0)
    q = torch.randn(6, 2, FEW_QUERIES, 8, generator=g, requires_grad=True)
    k, v = (torch.randn(6, 2, _FEW_QUERIES_MIN_KEYS + 7, 8, generator=g) for _ in range(2))
    mask = None
    if masked:
        mask = torch.rand(6, 1, 1, k.shape[2], generator=g) > 0.5
        mask[0] = False  # the first set may attend to nothing
    ours = _attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.allclose(ours, ref, atol=1e-5)
    if masked:
        assert torch.equal(ours[0], torch.zeros_like(ours[0]))
    grad_ours, = torch.autograd.grad(ours.square().sum(), q)
    grad_ref, = torch.autograd.grad(ref.square().sum(), q)
    assert torch.allclose(grad_ours, grad_ref, atol=1e-5)


def test_losses_stay_float32_under_bf16_autocast():
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny")).train()
    b = to_torch(collate([_task(1, 50, 4, 3), _task(2, 40, 3, 2)]))
    objective = ObjectiveConfig(warmup_matching_steps=0)
    ref = compute_losses(net, b, objective)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = compute_losses(net, b, objective)
    assert out["loss"].dtype == torch.float32
    assert float(out["pin_loss"]) == pytest.approx(float(ref["pin_loss"]), abs=2e-2)
    assert float(out["cin_loss"]) == pytest.approx(float(ref["cin_loss"]), abs=5e-2)


def test_competitive_prototype_attention_ignores_masked_rows_and_prototypes_and_row_order():
    torch.manual_seed(0)
    mab = CompetitiveMAB(8, 2).eval()
    C, R = torch.randn(1, 4, 8), torch.randn(1, 30, 8)
    rows, protos = torch.ones(1, 30, dtype=torch.bool), torch.tensor([[True, True, True, False]])
    rows[0, 25:] = False
    out = mab(C, R, rows, protos)
    R2, C2 = R.clone(), C.clone()
    R2[0, 25:] = 100.0  # masked rows
    C2[0, 3] = -50.0  # masked prototype: only its own output may change
    assert torch.allclose(mab(C2, R2, rows, protos)[:, :3], out[:, :3], atol=1e-5)
    perm = torch.randperm(25)
    assert torch.allclose(mab(C, R[:, perm], rows[:, :25], protos), out, atol=1e-5)


def test_decoder_with_competition_trains_and_old_configs_load_without_it():
    cfg = ModelConfig.preset("tiny", proto_competition=True)
    net = TabClustNet(cfg)
    b = to_torch(collate([_task(1, 50, 4, 3), _task(2, 40, 3, 2)]))
    out = compute_losses(net, b, ObjectiveConfig(warmup_matching_steps=0))
    out["loss"].backward()
    assert all(p.grad is not None for p in net.decoder.parameters())
    data = cfg.to_dict()
    del data["proto_competition"]
    assert not ModelConfig.from_dict(data).proto_competition


def test_decoder_without_row_updates_scores_the_encoder_rows_and_old_configs_keep_them():
    from model.decoder import IterativeDecoder

    torch.manual_seed(0)
    cfg = ModelConfig.preset("tiny", row_updates=False)
    dec = IterativeDecoder(cfg).eval()
    assert all(len(block) == 2 for block in dec.blocks)  # prototype SA and prototype<-data CA only
    R = torch.randn(1, 30, cfg.d_model)
    rows, k_mask = torch.ones(1, 30, dtype=torch.bool), torch.tensor([[True] * 3 + [False] * (cfg.k_max - 3)])
    seen = {}
    dec.head.register_forward_hook(lambda m, args, out: seen.update(R=args[0]))
    logits = dec(R, rows, k_mask)
    assert torch.equal(seen["R"], R)  # the head compares the encoder's rows themselves with the prototypes
    assert logits.shape == (1, 30, cfg.k_max)
    net = TabClustNet(cfg)
    out = compute_losses(net, to_torch(collate([_task(1, 50, 4, 3)])), ObjectiveConfig(warmup_matching_steps=0))
    out["loss"].backward()
    assert all(p.grad is not None for p in net.decoder.parameters())
    data = ModelConfig.preset("tiny").to_dict()
    del data["row_updates"]
    assert ModelConfig.from_dict(data).row_updates and len(IterativeDecoder(ModelConfig.from_dict(data)).blocks[0]) == 3


def test_farthest_point_seeds_pick_one_row_per_separated_cluster_from_the_context_only():
    from model.decoder import farthest_point_seeds

    torch.manual_seed(0)
    centers = torch.tensor([[0.0, 0.0], [20.0, 0.0], [0.0, 20.0], [20.0, 20.0]])
    y = torch.arange(60) % 4
    R = (centers[y] + 0.5 * torch.randn(60, 2))[None]
    ctx = torch.ones(1, 60, dtype=torch.bool)
    ctx[0, 50:] = False
    R[0, 55] = 1000.0  # a far row outside the context is never picked
    idx = farthest_point_seeds(R, ctx, 4)[0]
    assert (idx < 50).all() and sorted(y[idx].tolist()) == [0, 1, 2, 3]
    perm = torch.randperm(50)
    R2 = torch.cat([R[:, perm], R[:, 50:]], 1)
    idx2 = farthest_point_seeds(R2, ctx, 4)[0]
    assert torch.equal(R2[0, idx2], R[0, idx])  # the same rows, whatever their order


def test_decoder_with_seeded_prototypes_trains_and_old_configs_load_without_it():
    cfg = ModelConfig.preset("tiny", proto_seeding=True)
    net = TabClustNet(cfg)
    out = compute_losses(net, to_torch(collate([_task(1, 50, 4, 3), _task(2, 40, 3, 2)])),
                         ObjectiveConfig(warmup_matching_steps=0))
    out["loss"].backward()
    assert net.decoder.seed_gain.grad is not None and net.decoder.prototypes.grad is not None
    data = cfg.to_dict()
    del data["proto_seeding"]
    assert not ModelConfig.from_dict(data).proto_seeding


@pytest.mark.parametrize("competition, seeding, row_updates", [
    (True, True, True), (True, True, False), (False, False, False), (True, False, False), (False, True, True)])
def test_all_partitions_equal_one_decoder_pass_per_k(competition, seeding, row_updates):
    """all_partitions seeds each table once and shares the seeds across its candidate K, and without row updates
    projects each table's rows (keys, values, head) once for all its candidates: the same partitions as one
    decoder pass per K, on a padded batch of two tables."""
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny", proto_seeding=seeding, proto_competition=competition,
                                         row_updates=row_updates, dec_blocks=2)).eval()
    b = to_torch(collate([_task(1, 50, 4, 3), _task(2, 40, 3, 2)]))
    row_key_sets = []
    gather = net.decoder.blocks[0][1]  # the prototype <- data block of the first decoder block
    original = gather.keys_values
    gather.keys_values = lambda y: row_key_sets.append(y.shape[0]) or original(y)
    with torch.no_grad():
        R = net.encode(b["X"], b["row_mask"], b["col_mask"], b["cat_mask"])
        probs = net.all_partitions(R, b["row_mask"])
        # fixed rows: projected once per table (2), not once per candidate K (2 x 9)
        assert row_key_sets == [2 if not row_updates else 2 * (net.cfg.k_max - 1)]
        for j, k in enumerate(range(2, net.cfg.k_max + 1)):
            logits = net.partition_logits(R, b["row_mask"], torch.full((2,), k))
            one = torch.softmax(logits, -1) * b["row_mask"][:, :, None]
            assert torch.allclose(probs[:, j], one, atol=1e-5)


def _categorical_only_rows(net, X, ctx_mask=None):
    """R of one all-categorical table with the CLS path and the value skip switched off (the skip alone)."""
    with torch.no_grad():
        net.encoder.rows.cls_gate.zero_()
        n, d = X.shape
        t = to_torch(collate([_Task(X, torch.zeros(n, dtype=torch.long).numpy(), 2, tuple(range(d)))]))
        ctx = None if ctx_mask is None else ctx_mask[None]
        return net.encode(t["X"], t["row_mask"], t["col_mask"], t["cat_mask"], ctx)[0]


def test_categorical_skip_starts_close_to_an_isometry_of_the_one_hot_encoding():
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny", col_dim=64, cat_skip=True)).eval()  # d_model 128, as `small`
    g = torch.Generator().manual_seed(1)
    X = torch.randint(0, 5, (60, 8), generator=g).float().numpy()
    R = _categorical_only_rows(net, X)
    onehot = torch.nn.functional.one_hot(torch.as_tensor(X).long(), 5).flatten(1).float()
    dist = lambda Z: (Z[:, None] - Z[None]).pow(2).sum(-1).sqrt()  # noqa: E731
    dr, do = dist(R), dist(onehot)
    off = ~torch.eye(60, dtype=torch.bool)
    distortion = (dr[off] / do[off]).sub(1).abs()  # random codes: near-orthogonal, so near-isometric (JL)
    assert distortion.median() < 0.08 and distortion.quantile(0.9) < 0.15
    assert torch.allclose(R.mean(0), torch.zeros(R.shape[1]), atol=1e-5)  # centred over the context


def test_categorical_skip_ignores_numeric_columns_and_non_context_rows():
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny", cat_skip=True)).eval()
    task = _task(5, 30, 4, 3, categorical=(1, 3))
    t = to_torch(collate([task]))
    skip = lambda X, ctx: net.encoder.categories(X, t["col_mask"], t["cat_mask"], ctx)[0]  # noqa: E731
    ctx = torch.ones(1, 30, dtype=torch.bool)
    ctx[0, 20:] = False
    ref = skip(t["X"], ctx)
    X2 = t["X"].clone()
    X2[0, :, 0] += 3.0  # a numeric column
    X2[0, 20:, 1] = (X2[0, 20:, 1] + 1) % 4  # categories of rows outside the context
    out = skip(X2, ctx)
    assert torch.allclose(out[0, :20], ref[0, :20], atol=1e-6)
    assert not torch.allclose(out[0, 20:], ref[0, 20:])  # those rows still read their own categories
    perm = torch.randperm(30)
    assert torch.allclose(skip(t["X"][:, perm], torch.ones(1, 30, dtype=torch.bool))[0],
                          skip(t["X"], torch.ones(1, 30, dtype=torch.bool))[0, perm], atol=1e-5)


def test_categorical_skip_lets_kmeans_on_the_initial_rows_find_clusters_carried_by_categories():
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    g = torch.Generator().manual_seed(2)
    y = torch.arange(90) % 3
    X = torch.randint(0, 6, (90, 12), generator=g)
    informative = torch.rand(90, 12, generator=g) < 0.8  # each column follows the cluster 80 % of the time
    X = torch.where(informative, y[:, None] * 2, X).float().numpy()
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny", cat_skip=True)).eval()
    R = _categorical_only_rows(net, X)
    labels = KMeans(3, n_init=5, random_state=0).fit_predict(R.numpy())
    assert adjusted_rand_score(y.numpy(), labels) > 0.9


def test_checkpoint_configs_from_before_the_categorical_skip_load_without_it():
    data = ModelConfig.preset("small").to_dict()
    data.pop("cat_skip", None)
    cfg = ModelConfig.from_dict(data)
    assert not cfg.cat_skip and TabClustNet(cfg).encoder.categories is None


@pytest.mark.parametrize("preset", ["tiny", "small"])
def test_rows_assigned_against_a_cached_context_get_their_one_pass_logits(preset):
    """``context_state`` + ``assign_rows`` (the context encoded once) equal the logits the same rows get as
    non-context rows of one pass with the context: tiny has the paper's row updates, small seeded prototypes
    and fixed rows; both have the categorical skip."""
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset(preset)).eval()
    assert net.assigns_from_context
    ctx_task, rows_task = _task(11, 60, 5, 3, categorical=(1, 4)), _task(12, 25, 5, 3, categorical=(1, 4))
    ctx, rows = to_torch(collate([ctx_task])), to_torch(collate([rows_task]))
    k = torch.tensor([3])
    both = to_torch(collate([_Task(torch.cat([torch.as_tensor(ctx_task.X), torch.as_tensor(rows_task.X)]).numpy(),
                                   torch.zeros(85, dtype=torch.long).numpy(), 3, (1, 4))]))
    ctx_mask = torch.zeros(1, 85, dtype=torch.bool)
    ctx_mask[0, :60] = True
    with torch.no_grad():
        R = net.encode(both["X"], both["row_mask"], both["col_mask"], both["cat_mask"], ctx_mask)
        ref = net.partition_logits(R, both["row_mask"], k, ctx_mask)[:, 60:]
        state = net.context_state(ctx["X"], ctx["row_mask"], ctx["col_mask"], ctx["cat_mask"], k)
        out = net.assign_rows(state, rows["X"], rows["row_mask"], rows["col_mask"], rows["cat_mask"])
        encoded = net.encode_context(ctx["X"], ctx["row_mask"], ctx["col_mask"], ctx["cat_mask"])
        plain = net.encode(ctx["X"], ctx["row_mask"], ctx["col_mask"], ctx["cat_mask"])
        reused = net.context_state(ctx["X"], ctx["row_mask"], ctx["col_mask"], ctx["cat_mask"], k, encoded)
        out_reused = net.assign_rows(reused, rows["X"], rows["row_mask"], rows["col_mask"], rows["cat_mask"])
    assert torch.isinf(out[..., 3:]).all()
    assert torch.allclose(out[..., :3], ref[..., :3], atol=1e-5)
    # encode_context encodes as encode does, and a state built from that encoding is the same state
    assert torch.equal(encoded[0], plain)
    assert torch.equal(out_reused, out)


def test_encoding_a_table_in_several_column_orders_equals_the_batch_of_its_permutations():
    """``encode_context(orders=)`` embeds the columns once for every ordering: the same encoding, partitions and
    context state as the batch of the permuted tables (the estimator's column-order ensemble relies on it)."""
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny")).eval()
    n, d = 40, 5
    X = torch.randn(1, n, d)
    X[0, :, 3] = torch.randint(0, 3, (n,)).float()
    cat = torch.zeros(1, d, dtype=torch.bool)
    cat[0, 3] = True
    orders = torch.tensor([[0, 1, 2, 3, 4], [4, 2, 0, 3, 1], [3, 4, 1, 0, 2]])
    m = len(orders)
    rows, cols = torch.ones(1, n, dtype=torch.bool), torch.ones(1, d, dtype=torch.bool)
    with torch.inference_mode():
        R1, enc1 = net.encode_context(X, rows, cols, cat, orders)
        Xm, catm = X[0][:, orders].transpose(0, 1), cat[0][orders]
        R2, enc2 = net.encode_context(Xm, rows.expand(m, -1), cols.expand(m, -1), catm)
        batch = net.infer(Xm, rows.expand(m, -1), cols.expand(m, -1), catm)
    opened = net.open_context(X[0].numpy(), cat[0].numpy(), orders.numpy())  # the encoding with orders, as R1
    torch.testing.assert_close(R1, R2, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.as_tensor(opened.probs), batch.probs.double(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.as_tensor(opened.posterior), torch.softmax(batch.k_logits.double(), -1),
                               rtol=1e-5, atol=1e-5)
    for s1, s2 in zip(enc1.summaries, enc2.summaries):
        torch.testing.assert_close(s1, s2, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(enc1.cat_mean, enc2.cat_mean, rtol=1e-5, atol=1e-5)

    # further rows: their column embedding once for every ordering, as the batch of their permutations
    new = torch.randn(1, 15, d)
    new[0, :, 3] = torch.randint(0, 3, (15,)).float()
    k = torch.full((m,), 3)
    new_rows = torch.ones(1, 15, dtype=torch.bool)
    with torch.inference_mode():
        state_once = net.context_state(X, rows, cols, cat, k, (R1, enc1), orders)
        state_fresh = net.context_state(X, rows, cols, cat, k, orders=orders)  # encoded here, as predict does
        state_batch = net.context_state(Xm, rows.expand(m, -1), cols.expand(m, -1), catm, k, (R2, enc2))
        once = net.assign_rows(state_once, new, new_rows, cols, cat, orders)
        fresh = net.assign_rows(state_fresh, new, new_rows, cols, cat, orders)
        batch = net.assign_rows(state_batch, new[0][:, orders].transpose(0, 1), new_rows.expand(m, -1),
                                cols.expand(m, -1), catm)
        plain_state = net.context_state(X, rows, cols, cat, k[:1])
    assert once.shape == (m, 15, net.cfg.k_max)
    torch.testing.assert_close(once, batch, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fresh, once, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="recorded with orders"):
        net.assign_rows(plain_state, new, new_rows, cols, cat, orders)


@pytest.mark.parametrize("decoder", [
    {},  # iterative, the paper's row updates: assigns from the context
    {"proto_seeding": True, "row_updates": False},  # iterative as the small preset: seeded prototypes, fixed rows
    {"decoder": "transformer"},  # re-encodes the context with every chunk
    {"decoder": "naive"},
])
def test_open_context_assigns_rows_as_one_joint_pass_under_a_context_mask(decoder):
    """``open_context(...).assign`` (the context once where the decoder allows it, else again with every chunk)
    gives the rows, in every ordering, the probabilities they get as non-context rows of one pass with the context
    under a context mask; its partitions and posterior are those of ``infer`` on the context in each ordering."""
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny", **decoder)).eval()
    assert net.assigns_from_context == (decoder.get("decoder", "iterative") == "iterative")
    ctx_task, rows_task = _task(21, 50, 5, 3, categorical=(1, 4)), _task(22, 23, 5, 3, categorical=(1, 4))
    cat = torch.zeros(5, dtype=torch.bool)
    cat[[1, 4]] = True
    orders = torch.tensor([[0, 1, 2, 3, 4], [4, 2, 0, 3, 1], [3, 4, 1, 0, 2]])
    m, k, n_ctx = len(orders), 3, 50
    both = torch.cat([torch.as_tensor(ctx_task.X), torch.as_tensor(rows_task.X)])  # (73, D)
    Xm = both[:, orders].transpose(0, 1)  # (M, 73, D): the joint table in every ordering
    row_mask, col_mask = torch.ones(m, 73, dtype=torch.bool), torch.ones(m, 5, dtype=torch.bool)
    ctx_mask = torch.zeros(m, 73, dtype=torch.bool)
    ctx_mask[:, :n_ctx] = True
    with torch.no_grad():
        R = net.encode(Xm, row_mask, col_mask, cat[orders], ctx_mask)
        ref = torch.softmax(net.partition_logits(R, row_mask, torch.full((m,), k), ctx_mask)[:, n_ctx:, :k].double(),
                            dim=-1)
        alone = net.infer(Xm[:, :n_ctx], row_mask[:, :n_ctx], col_mask, cat[orders])

    context = net.open_context(ctx_task.X, cat.numpy(), orders.numpy())
    out = context.assign(rows_task.X, k, batch_rows=10)  # chunks of 10, 10 and 3 rows
    assert out.shape == (m, 23, k) and out.dtype == np.float64
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-5)
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-9)
    np.testing.assert_allclose(context.assign(rows_task.X, k, batch_rows=23), out, atol=1e-6)  # one chunk
    assert context.probs.shape == (m, net.cfg.k_max - 1, n_ctx, net.cfg.k_max)
    np.testing.assert_allclose(context.probs, alone.probs.double().numpy(), atol=1e-5)
    np.testing.assert_allclose(context.posterior, torch.softmax(alone.k_logits.double(), -1).numpy(), atol=1e-5)
    np.testing.assert_allclose(context.posterior.sum(-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("competitive", [False, True])
def test_query_sets_sharing_projected_keys_equal_repeated_keys(competitive):
    """MAB(kv=keys_values(y)) with G query sets per key set (the decoder's candidate K) equals the block on y
    repeated G times, key and query masks included; competing prototypes compete only within their own set."""
    torch.manual_seed(0)
    block = (CompetitiveMAB if competitive else MAB)(8, 2).eval()
    g, q, t = 3, 4, 6
    x, y = torch.randn(2 * g, q, 8), torch.randn(2, t, 8)
    key_mask = torch.ones(2, t, dtype=torch.bool)
    key_mask[1, 4:] = False
    query_mask = torch.arange(q)[None, :] < torch.tensor([2, 3, 4, 4, 1, 2])[:, None]
    with torch.no_grad():
        shared = block(x, None, key_mask, query_mask, kv=block.keys_values(y))
        repeated = block(x, y.repeat_interleave(g, 0), key_mask.repeat_interleave(g, 0), query_mask)
    torch.testing.assert_close(shared, repeated, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="cannot share"):
        block(x[:5], None, key_mask, query_mask[:5], kv=block.keys_values(y))


def test_a_block_gives_a_subset_of_queries_the_outputs_it_gives_them_among_all():
    """What lets the row interaction's last block compute only the CLS tokens: each query's output depends on
    itself and the keys alone."""
    torch.manual_seed(0)
    block = MAB(8, 2).eval()
    x = torch.randn(5, 7, 8)
    mask = torch.rand(5, 7) > 0.3
    mask[:, 0] = True
    with torch.no_grad():
        torch.testing.assert_close(block(x[:, :3], x, mask), block(x, x, mask)[:, :3], rtol=1e-5, atol=1e-6)


def test_row_interaction_in_slices_equals_one_piece(monkeypatch):
    import model.encoder as encoder_module

    torch.manual_seed(1)
    net = TabClustNet(ModelConfig.preset("tiny")).eval()
    X = torch.randn(3, 50, 6)
    masks = (torch.ones(3, 50, dtype=torch.bool), torch.ones(3, 6, dtype=torch.bool),
             torch.zeros(3, 6, dtype=torch.bool))
    with torch.inference_mode():
        monkeypatch.setattr(encoder_module, "ROW_CHUNK", 10**9)
        whole = net.encode(X, *masks)
        monkeypatch.setattr(encoder_module, "ROW_CHUNK", 7)  # slices that cut across tables
        sliced = net.encode(X, *masks)
    torch.testing.assert_close(sliced, whole, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("missing_column", [False, True])
def test_row_interaction_cpu_inference_path_matches_the_training_path(net, missing_column):
    """Without gradients on the CPU the row interaction builds its tokens in one buffer, drops the key mask when
    every column is present and runs in slices of rows: the same rows as the plain path (600 rows > one slice)."""
    from model.encoder import ROW_CHUNK

    b, n, d, e = 2, 300, 5, net.cfg.col_dim
    assert b * n > ROW_CHUNK
    g = torch.Generator().manual_seed(1)
    cells, values = torch.randn(b, n, d, e, generator=g), torch.randn(b, n, d, generator=g)
    col_mask = torch.ones(b, d, dtype=torch.bool)
    if missing_column:
        col_mask[1, 3] = False
        cells[1, :, 3], values[1, :, 3] = 0.0, 0.0
    rows = net.encoder.rows
    with torch.enable_grad():
        plain = rows(cells, col_mask, values)
    with torch.no_grad():
        fast = rows(cells, col_mask, values)
    assert plain.requires_grad and not fast.requires_grad
    torch.testing.assert_close(fast, plain.detach(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("grad", [False, True])
def test_row_interaction_reads_each_member_at_its_positions_as_the_table_permuted_to_its_order(grad):
    """``positions``: one table's cells read in several column orderings without permuting them (the estimator's
    ensemble) give each member the rows of the table permuted to its order, in CPU inference (slices of rows that
    cross members: 3 x 300 rows > one slice) and on the plain path alike."""
    from model.encoder import ROW_CHUNK

    torch.manual_seed(0)
    rows = TabClustNet(ModelConfig.preset("small")).eval().encoder.rows
    n, d, e = 300, 6, rows.cls.shape[-1]
    assert 3 * n > ROW_CHUNK
    g = torch.Generator().manual_seed(2)
    cells, values = torch.randn(1, n, d, e, generator=g), torch.randn(1, n, d, generator=g)
    col_mask = torch.ones(1, d, dtype=torch.bool)
    orders = torch.stack([torch.arange(d), torch.tensor([5, 3, 1, 0, 2, 4]), torch.tensor([2, 0, 4, 5, 1, 3])])
    with torch.no_grad():
        permuted = rows(cells[0][:, orders].transpose(0, 1), col_mask.expand(3, -1),
                        values[0][:, orders].transpose(0, 1))
    with torch.set_grad_enabled(grad):
        read = rows(cells, col_mask, values, positions=torch.argsort(orders, dim=1))
    assert read.shape == (3, n, rows.norm.normalized_shape[0])
    torch.testing.assert_close(read.detach(), permuted, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="one table"):
        rows(cells.expand(2, -1, -1, -1), col_mask.expand(2, -1), values.expand(2, -1, -1),
             positions=torch.argsort(orders, dim=1))


@pytest.mark.parametrize("categorical", [False, True])
def test_inference_encodes_a_table_as_training_does_whether_or_not_it_has_categorical_columns(categorical):
    """Inference skips the categorical embedding and the categorical skip of a table without categorical columns
    (they would add nothing); training keeps them in the graph. The rows are the same either way."""
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("small")).eval()
    n, d = 60, 5
    X = torch.randn(1, n, d)
    cat = torch.zeros(1, d, dtype=torch.bool)
    if categorical:
        X[0, :, 2] = torch.randint(0, 4, (n,)).float()
        cat[0, 2] = True
    masks = (torch.ones(1, n, dtype=torch.bool), torch.ones(1, d, dtype=torch.bool), cat)
    with torch.enable_grad():
        trained_path = net.encode(X, *masks)
    with torch.no_grad():
        inferred = net.encode(X, *masks)
    torch.testing.assert_close(inferred, trained_path.detach(), rtol=1e-5, atol=1e-5)


def test_competing_prototypes_read_rows_alike_with_an_all_present_mask_or_none_needed():
    """In CPU inference a key mask with every row present is not applied (it would multiply by one): the same
    prototypes as the path that applies it."""
    torch.manual_seed(0)
    block = CompetitiveMAB(8, 2).eval()
    x, y = torch.randn(3, 4, 8), torch.randn(3, 20, 8)
    key_mask = torch.ones(3, 20, dtype=torch.bool)
    query_mask = torch.arange(4)[None, :] < torch.tensor([2, 3, 4])[:, None]
    with torch.enable_grad():
        applied = block(x, y, key_mask, query_mask)
    with torch.no_grad():
        skipped = block(x, y, key_mask, query_mask)
    torch.testing.assert_close(skipped, applied.detach(), rtol=1e-5, atol=1e-6)


def test_a_block_without_gradients_gives_what_it_gives_with_them():
    """Without gradients a block writes its residual sums and activation in place: the same outputs (and its
    inputs untouched)."""
    torch.manual_seed(0)
    block = MAB(8, 2).eval()
    x, y = torch.randn(5, 7, 8), torch.randn(5, 9, 8)
    x0 = x.clone()
    with torch.enable_grad():
        plain = block(x, y)
    with torch.no_grad():
        fast = block(x, y)
    assert torch.equal(fast, plain.detach()) and torch.equal(x, x0)


def test_a_block_under_autocast_without_gradients_keeps_the_residual_in_full_precision():
    """bf16 autocast (GPU training's validation runs so, without gradients): the residual sum promotes to the
    stream's float32 as it does with gradients, rather than being rounded into the bf16 projection in place."""
    torch.manual_seed(0)
    block = MAB(8, 2).eval()
    x, y = torch.randn(5, 7, 8), torch.randn(5, 9, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with torch.enable_grad():
            plain = block(x, y)
        with torch.no_grad():
            fast = block(x, y)
    assert fast.dtype == plain.dtype == torch.float32
    torch.testing.assert_close(fast, plain.detach(), rtol=0, atol=0)
