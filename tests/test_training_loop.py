"""The shared training loop (schedule, clipping, stopping, checkpoints, resume rules) and the
discriminator-health metrics, on hand-built inputs with known answers."""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass

import pytest
import torch

from training.networks import loop, runtime
from training.networks.rtd_health import CollapseGuard, representation_spread, rtd_auc, rtd_skill


def test_auc_known_answers():
    labels = torch.tensor([0, 0, 1, 1])
    assert rtd_auc(torch.tensor([0.1, 0.2, 0.8, 0.9]), labels) == 1.0
    assert rtd_auc(torch.tensor([0.9, 0.8, 0.2, 0.1]), labels) == 0.0
    assert rtd_auc(torch.zeros(4), labels) == 0.5  # one score for everything: chance
    # pairs (pos, neg): 0.5>0.1 yes, 0.5>0.5 tie, 0.3>0.1 yes, 0.3<0.5 no -> (1 + 0.5 + 1 + 0) / 4
    assert rtd_auc(torch.tensor([0.1, 0.5, 0.5, 0.3]), labels) == pytest.approx(0.625)
    assert math.isnan(rtd_auc(torch.tensor([0.1, 0.2]), torch.tensor([0, 0])))


def test_rtd_skill_against_the_base_rate():
    h = -(0.15 * math.log(0.15) + 0.85 * math.log(0.85))  # always predicting 15% replaced
    assert rtd_skill(h, 0.15) == pytest.approx(0.0)
    assert rtd_skill(0.0, 0.15) == pytest.approx(1.0)
    assert rtd_skill(h / 2, 0.15) == pytest.approx(0.5)
    assert rtd_skill(0.1, 0.0) < 0  # nothing replaced: any loss is worse than the base rate


def test_spread_of_identical_and_orthogonal_vectors():
    same = representation_spread(torch.tensor([[1.0, -2.0, 3.0]]).repeat(10, 1))
    assert same["cos"] == pytest.approx(1.0) and same["std"] == pytest.approx(0.0, abs=1e-9)
    ortho = representation_spread(torch.eye(8))
    assert ortho["cos"] == pytest.approx(0.0, abs=1e-9) and ortho["std"] > 0.5
    # scale-free: the same vectors ten times larger spread the same
    h = torch.randn(50, 16, generator=torch.Generator().manual_seed(0))
    assert representation_spread(10 * h)["std"] == pytest.approx(representation_spread(h)["std"])


def test_collapse_guard_waits_for_warmup_and_patience():
    g = CollapseGuard(after_step=100, max_auc=0.6, max_std=0.05, patience=2)
    assert g.check(50, 0.5, 0.0) is None and g.check(100, 0.5, 0.0) is None  # still warming up
    assert g.check(200, 0.5, 0.01) is None  # first strike
    assert g.check(300, 0.9, 0.01) is None  # a good AUC resets
    assert g.check(400, 0.5, 0.2) is None  # a healthy spread resets
    assert g.check(500, 0.52, 0.01) is None
    msg = g.check(600, 0.51, 0.01)
    assert msg is not None and "collapsed at step 600" in msg and "0.510" in msg


@dataclass
class Cfg:
    lr: float = 1e-3
    max_steps: int = 100
    rtd_weight: float = 50.0
    new_setting: int = 7


def test_resume_config_refuses_recipe_changes_and_logs_schedule_changes(tmp_path):
    saved = {"lr": 5e-4, "max_steps": 100, "rtd_weight": 50.0}
    logged: list[str] = []
    # the same command again: nothing given differs, so the checkpoint's settings stand
    same = loop.resume_config(Cfg, Cfg(lr=5e-4), saved, {"lr"}, {"max_steps"}, tmp_path, logged.append)
    assert (same.lr, same.max_steps, same.new_setting) == (5e-4, 100, 7)
    # a flag that was not given never overrides the checkpoint, even if its default differs
    kept = loop.resume_config(Cfg, Cfg(), saved, set(), {"max_steps"}, tmp_path, logged.append)
    assert kept.lr == 5e-4
    # a given schedule flag is applied and logged
    logged.clear()
    longer = loop.resume_config(Cfg, Cfg(lr=5e-4, max_steps=300), saved, {"max_steps"}, {"max_steps"}, tmp_path,
                                logged.append)
    assert longer.max_steps == 300 and any("--max-steps 300 replaces the checkpoint's 100" in m for m in logged)
    # a given recipe flag that differs is refused, naming the flag and both values
    with pytest.raises(SystemExit, match=r"--rtd-weight 1\.0 \(checkpoint: 50\.0\)"):
        loop.resume_config(Cfg, Cfg(rtd_weight=1.0), saved, {"rtd_weight"}, {"max_steps"}, tmp_path, logged.append)


def test_given_flags_sees_only_what_was_typed():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--init")
    g.add_argument("--from-scratch")
    ap.add_argument("--out", required=True)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--max-steps", type=int, default=10)
    assert loop.given_flags(ap, ["--init", "x", "--out", "o", "--lr", "5e-4"]) == {"init", "out", "lr"}


class Quadratic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.full((4,), 10.0))


def test_step_runner_schedule_clipping_stop_and_checkpoint(tmp_path):
    model = Quadratic()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    seen: list[tuple[int, float, float]] = []

    def micro_step():
        return {"loss": (model.w ** 2).sum()}

    runner = loop.StepRunner(model, opt, lr=0.1, warmup_steps=4, max_steps=20, ckpt_path=tmp_path / "ckpt.pt",
                             ckpt_every=3, state=lambda: {"extra": 1}, clip=1.0, is_main=True)

    def on_step(step, lr, stats):
        seen.append((step, lr, stats["grad_norm"]))
        if step == 7:
            runner.stop("enough")

    w0 = model.w.detach().clone()
    result = runner.run(micro_step, on_step, accum=2)
    assert result.stopped == "enough" and result.step == 7 and not result.finished
    assert [s for s, _, _ in seen] == list(range(1, 8))
    assert [lr for _, lr, _ in seen] == pytest.approx([loop.lr_at(s, 0.1, 4, 20) for s in range(7)])
    # the gradient (norm 40) is clipped to norm 1: the first SGD step moves w by lr * 1 in all (0.025 * 0.5 each)
    assert seen[0][2] == pytest.approx(40.0)
    ckpt = loop.load_checkpoint(tmp_path / "ckpt.pt")
    assert ckpt["step"] == 7 and ckpt["extra"] == 1
    assert float((w0 - model.w.detach()).norm()) <= sum(lr for _, lr, _ in seen) + 1e-6
    # a second invocation with stop_after runs exactly that many more steps
    runner2 = loop.StepRunner(model, opt, lr=0.1, warmup_steps=4, max_steps=20, ckpt_path=tmp_path / "ckpt.pt",
                              ckpt_every=100, state=dict, stop_after=5, step=ckpt["step"])
    assert runner2.run(micro_step, lambda *a: None).step == 12


def test_finetune_batches_come_from_buckets_of_similar_length():
    import numpy as np

    from training.data.csc_data import EncodedPairs
    from training.networks.finetune import length_buckets

    lengths = [7, 3, 9, 3, 5, 12, 4, 8, 6, 10]
    data = EncodedPairs([np.zeros(n, np.int64) for n in lengths], [], [])
    buckets = length_buckets(data, batch_size=2, batches_per_bucket=2)  # buckets of 4 pairs
    assert [len(b) for b in buckets] == [4, 4, 2]
    assert [[lengths[i] for i in b] for b in buckets] == [[3, 3, 4, 5], [6, 7, 8, 9], [10, 12]]
    assert sorted(int(i) for b in buckets for i in b) == list(range(10))
    (one,) = length_buckets(data, batch_size=2, batches_per_bucket=0)  # off: one bucket of every pair
    assert len(one) == 10


def test_pairs_encode_the_same_in_blocks_as_uint16(tmp_path, monkeypatch):
    import numpy as np
    from fake_networks import tiny_vocab

    from training.data import csc_data

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(tiny_vocab()) + "\n", encoding="utf-8")
    ids = {t: i for i, t in enumerate(tiny_vocab())}
    pairs = [("今天天汽很好", "今天天气很好"), ("hello 天汽", "hello 天气"), ("天气", "天气")] * 3
    whole = csc_data.encode_pairs(pairs, vocab, 32)
    monkeypatch.setattr(csc_data, "ENCODE_BLOCK", 2)  # blocks of two pairs, the last one alone
    blocks = csc_data.encode_pairs(pairs, vocab, 32)
    for field in ("src", "tgt", "editable"):
        assert all(np.array_equal(a, b) for a, b in zip(getattr(whole, field), getattr(blocks, field)))
    assert whole.src[0].dtype == np.uint16 and len(blocks) == 9
    src, tgt, editable = csc_data.collate(blocks, np.array([0, 1]))
    assert src.dtype == tgt.dtype == np.int64  # batches are int64 as before
    assert src[0, 4] == ids["汽"] and tgt[0, 4] == ids["气"] and (src[0] != tgt[0]).sum() == 1
    assert tgt[1, 3] == ids["气"] and editable[1].sum() == 2 and not editable[1, 1]  # "hello" is one piece


def test_read_provenance_from_a_run_or_a_bundle(tmp_path):
    """Fine-tuning on from a run keeps its provenance.json; from a bundle, its manifest's provenance (so the
    shipped model's earlier stages stay on record); from neither, nothing."""
    import json

    from training.networks.loop import read_provenance

    run, bundle, bare = tmp_path / "run", tmp_path / "bundle", tmp_path / "bare"
    for d in (run, bundle, bare):
        d.mkdir()
    (run / "provenance.json").write_text(json.dumps({"finetune": {"steps": 4}}), encoding="utf-8")
    (bundle / "manifest.json").write_text(json.dumps({"name": "x", "provenance": {"finetune": {"steps": 7},
                                                                                  "init": "step_3"}}),
                                          encoding="utf-8")
    assert read_provenance(run) == {"finetune": {"steps": 4}}
    assert read_provenance(bundle) == {"finetune": {"steps": 7}, "init": "step_3"}
    assert read_provenance(bare) == {}


def test_precision_autocasts_matmuls_only_when_bf16():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    fp32 = runtime.setup_runtime("cpu", precision="fp32")
    with fp32.autocast():
        assert (a @ b).dtype == torch.float32
    bf16 = runtime.setup_runtime("cpu", precision="bf16")
    assert bf16.precision == "bf16" and fp32.precision == "fp32"
    with bf16.autocast():
        logits = a @ b
        assert logits.dtype == torch.bfloat16  # the matmul in bf16, the loss on it in fp32
        assert torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2, 0])).dtype == torch.float32
    assert runtime.setup_runtime("cpu").bf16 == runtime.cpu_prefers_bf16()  # auto: native bf16, and faster here
    fused = torch.backends.cuda.flash_sdp_enabled()  # the kernel flags sdpa_kernel sets, for every device
    with bf16.autocast():
        assert torch.backends.cuda.math_sdp_enabled() and not torch.backends.cuda.flash_sdp_enabled()
    with fp32.autocast():
        assert torch.backends.cuda.flash_sdp_enabled() == fused  # fp32 keeps the fused attention
    assert torch.backends.cuda.flash_sdp_enabled() == fused  # and bf16 gave it back
    with pytest.raises(ValueError, match="precision"):
        runtime.setup_runtime("cpu", precision="fp16")


def test_auto_precision_never_picks_emulated_bf16(monkeypatch):
    runtime.cpu_prefers_bf16.cache_clear()
    monkeypatch.setattr(runtime, "cpu_has_bf16", lambda: False)
    try:
        assert runtime.cpu_prefers_bf16() is False  # no timing can talk it into emulated bf16
        assert runtime.setup_runtime("cpu").precision == "fp32"
        assert runtime.setup_runtime("cpu", precision="bf16").precision == "bf16"  # an explicit flag still wins
    finally:
        runtime.cpu_prefers_bf16.cache_clear()


def test_generator_on_the_discriminators_body_shares_one_pass():
    """--generator-body discriminator: the corrector is the discriminator's body (the same module) under a
    generator head, its output tied to the shared embeddings; with nothing masked, one forward pass gives
    exactly the losses of two separate passes."""
    import torch.nn.functional as F

    from training.networks.finetune import CscModel, generator_on_discriminator
    from training.networks.modeling import build_models, generator_head, get_config

    torch.manual_seed(0)
    gen, disc = build_models(get_config("debug", vocab_size=50))
    wide = generator_on_discriminator(gen, disc)
    assert wide.electra is disc.electra and wide.config.hidden_size == disc.config.hidden_size
    assert wide.generator_lm_head.weight is disc.electra.embeddings.word_embeddings.weight
    assert torch.equal(wide.generator_lm_head.bias, gen.generator_lm_head.bias)
    model = CscModel(wide, disc).eval()
    src = torch.tensor([[2, 10, 11, 12, 3], [2, 20, 21, 3, 0]])
    tgt = src.clone()
    tgt[0, 2] = 13
    editable = (src > 3)
    train_pos = editable.clone()
    out = model(src, tgt, editable, train_pos, torch.zeros_like(src, dtype=torch.bool), det_weight=2.0)
    attn = (src != 0).long()
    d = disc(input_ids=src, attention_mask=attn).logits
    det = F.binary_cross_entropy_with_logits(d[attn.bool()], ((src != tgt) & editable)[attn.bool()].float())
    h = wide.electra(input_ids=src, attention_mask=attn).last_hidden_state[train_pos]
    cor = F.cross_entropy(generator_head(wide, h), tgt[train_pos])
    assert torch.allclose(out["det"], det, atol=1e-6) and torch.allclose(out["cor"], cor, atol=1e-6)
    assert torch.allclose(out["loss"], cor + 2.0 * det, atol=1e-6)
    # such a pair loaded back as two models (equal bodies) is tied again, its trained head kept
    import copy

    disc2, gen2 = copy.deepcopy(disc), copy.deepcopy(wide)
    gen2.electra = copy.deepcopy(disc2.electra)
    assert gen2.electra is not disc2.electra
    again = generator_on_discriminator(gen2, disc2)
    assert again is gen2 and again.electra is disc2.electra
    assert again.generator_lm_head.weight is disc2.electra.embeddings.word_embeddings.weight
    torch.manual_seed(1)
    fresh = generator_on_discriminator(build_models(get_config("debug", vocab_size=50))[0], disc2)
    assert not torch.equal(fresh.generator_predictions.dense.weight, again.generator_predictions.dense.weight)


def test_masked_finetuning_masks_correct_characters_for_the_generator_only():
    """--mft-rate: the masked correct characters are [MASK] for both heads' one pass, restored by the generator
    (trained there on the original character) and left out of the detection loss; errors are never masked."""
    import numpy as np
    import torch.nn.functional as F

    from training.networks.finetune import CscModel, FinetuneConfig, generator_on_discriminator, mft_positions
    from training.networks.modeling import build_models, generator_head, get_config

    torch.manual_seed(0)
    gen, disc = build_models(get_config("debug", vocab_size=200))  # [MASK] is 103
    model = CscModel(generator_on_discriminator(gen, disc), disc).eval()
    src = torch.tensor([[2, 10, 11, 12, 14, 3], [2, 20, 21, 22, 3, 0]])
    tgt = src.clone()
    tgt[0, 2] = 13
    editable = src > 4
    mft = torch.zeros_like(src, dtype=torch.bool)
    mft[0, 4] = mft[1, 2] = True
    train_pos = (src != tgt) & editable
    out = model(src, tgt, editable, train_pos, torch.zeros_like(mft), det_weight=1.0, mft_mask=mft)
    from corrector.text.tokenize import SPECIAL_IDS

    seen = torch.where(mft, torch.full_like(src, SPECIAL_IDS["[MASK]"]), src)
    attn = (src != 0).long()
    keep = attn.bool() & ~mft
    d = disc(input_ids=seen, attention_mask=attn).logits
    det = F.binary_cross_entropy_with_logits(d[keep], ((src != tgt) & editable)[keep].float())
    pos = train_pos | mft
    h = disc.electra(input_ids=seen, attention_mask=attn).last_hidden_state[pos]
    cor = F.cross_entropy(generator_head(model.gen, h), tgt[pos])
    assert torch.allclose(out["det"], det, atol=1e-6) and torch.allclose(out["cor"], cor, atol=1e-6)
    assert "cor_acc_mft" in out
    # without a mask the loss differs (the masks matter), and the drawn positions are correct editable ones only
    plain = model(src, tgt, editable, train_pos, torch.zeros_like(mft), det_weight=1.0)
    assert not torch.allclose(plain["loss"], out["loss"])
    rng = np.random.default_rng(0)
    s, t, e = src.numpy(), tgt.numpy(), editable.numpy()
    drawn = np.zeros_like(s, dtype=bool)
    for _ in range(200):
        drawn |= mft_positions(s, t, e, rng, 0.5)
    assert (drawn == ((s == t) & e)).all()
    assert not mft_positions(s, t, e, rng, 0.0).any()
    assert FinetuneConfig().mft_rate == 0.0  # off unless asked


def test_step_kinds_follow_their_shares_and_draw_nothing_when_off():
    import numpy as np

    from training.networks.finetune import FinetuneConfig, step_kind

    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    assert step_kind(rng, FinetuneConfig()) == "plain" and rng.bit_generator.state == state
    cfg = FinetuneConfig(mft_rate=0.2, mft_step_share=0.7, target_copy_share=0.15)
    kinds = [step_kind(rng, cfg) for _ in range(20000)]
    share = {k: kinds.count(k) / len(kinds) for k in ("masked", "copy", "plain")}
    assert abs(share["masked"] - 0.7) < 0.02 and abs(share["copy"] - 0.15) < 0.02 and abs(share["plain"] - 0.15) < 0.02
    only_copies = FinetuneConfig(target_copy_share=1.0)
    assert {step_kind(rng, only_copies) for _ in range(50)} == {"copy"}


def test_step_runner_skips_a_non_finite_step_and_stops_after_many(tmp_path, monkeypatch):
    model = Quadratic()
    opt = torch.optim.AdamW(model.parameters(), lr=0.0)
    bad_steps = {3}

    def micro_step():
        loss = (model.w ** 2).sum()
        return {"loss": loss * float("nan") if runner.step + 1 in bad_steps else loss}

    runner = loop.StepRunner(model, opt, lr=0.1, warmup_steps=0, max_steps=10, ckpt_path=tmp_path / "ckpt.pt",
                             ckpt_every=100, state=dict, clip=1.0)
    weights: dict[int, torch.Tensor] = {}
    stats: dict[int, dict] = {}

    def on_step(step, lr, s):
        weights[step], stats[step] = model.w.detach().clone(), s

    result = runner.run(micro_step, on_step)
    assert result.finished and result.stopped is None
    assert torch.equal(weights[3], weights[2])  # the NaN step left the weights as they were ...
    assert [stats[k]["skipped_steps"] for k in (2, 3, 4)] == [0.0, 1.0, 1.0]  # counted in the logged stats
    assert not torch.equal(weights[4], weights[3])  # ... and training went on
    assert torch.isfinite(model.w).all()
    # many in a row: the run stops, its weights still finite
    monkeypatch.setattr(loop, "MAX_NONFINITE", 4)
    model2 = Quadratic()
    bad_steps = set(range(1, 100))
    runner = loop.StepRunner(model2, torch.optim.AdamW(model2.parameters(), lr=0.0), lr=0.1, warmup_steps=0,
                             max_steps=10, ckpt_path=tmp_path / "ckpt2.pt", ckpt_every=100, state=dict, clip=1.0)
    result = runner.run(micro_step, lambda *a: None)
    assert result.stopped and "not finite" in result.stopped and result.step == 4
    assert torch.equal(model2.w.detach(), torch.full((4,), 10.0))


def test_step_runner_trims_the_heap_every_few_steps(tmp_path, monkeypatch):
    trims: list[int] = []
    model = Quadratic()
    runner = loop.StepRunner(model, torch.optim.SGD(model.parameters(), lr=0.0), lr=0.1, warmup_steps=1,
                             max_steps=25, ckpt_path=tmp_path / "ckpt.pt", ckpt_every=100, state=dict)
    monkeypatch.setattr(loop, "trim_heap", lambda: trims.append(runner.step) or True)
    assert runner.run(lambda: {"loss": (model.w ** 2).sum()}, lambda *a: None).step == 25
    assert trims == [loop.TRIM_EVERY * k for k in range(1, 25 // loop.TRIM_EVERY + 1)]


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_trim_heap_gives_freed_heap_pages_back():
    """200 MB of 100 KB blocks (the heap, not mmap), every 50th kept so that no freed stretch is the heap's top:
    freeing the rest leaves them resident until trim_heap returns them."""
    if not loop.trim_heap():
        pytest.skip("no glibc: nothing to trim")
    blocks = [b"x" * 100_000 for _ in range(2_000)]
    kept = blocks[::50]
    del blocks
    before = resident_bytes()
    assert loop.trim_heap()
    assert before - resident_bytes() > 100_000_000, "the freed blocks stayed resident"
    assert len(kept) == 40
