"""Fine-tune a pretrained generator/discriminator pair for spelling correction.

    python -m training.networks.finetune --init runs/pretrain --train runs/csc/train.tsv --dev runs/csc/dev.tsv \\
        --out runs/finetune --max-minutes 60
    python -m training.networks.finetune --from-scratch cpu ...      # the no-pretraining baseline

The discriminator learns to flag erroneous characters (label 1 where source != target); the
generator, a head on the discriminator's body (``--generator-body own``: the pretrained generator), learns to put
the correct character at them, seeing each error as it is (``--mask-prob``: the share shown as [MASK] instead). With
``--mft-rate`` (masked fine-tuning, Wu et al., ACL 2023) a share of the *correct* characters is shown as [MASK] and
the generator restores them, so that it keeps learning the language and not only the error pairs; the detector is
not trained at those positions. ``--mft-step-share`` and ``--target-copy-share`` mix masked steps with plain ones and
with target -> target copies (macro-correct v2: 0.7 and 0.15, against over-correction). Dev metrics are computed as
training goes: the best pair is kept in out/best, the last step's in out/discriminator and out/generator (``--keep
best`` puts the best there). Re-running the command resumes. The defaults are the shipped recipe's wherever its
three fine-tuning stages agree (training/recipes/default.toml).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import ElectraForMaskedLM, ElectraForPreTraining

from corrector.text.tokenize import SPECIAL_IDS

from ..data.csc_data import EncodedPairs, collate, encode_pairs, read_pairs
from . import loop, runtime
from .modeling import build_models, generator_head, get_config, shares_body, tie_embeddings

GENERATOR_BODIES = ("own", "discriminator")  # the corrector: the pretrained generator, or a head on the discriminator


@dataclass
class FinetuneConfig:
    batch_size: int = 32
    lr: float = 2e-4
    weight_decay: float = 0.01
    warmup_steps: int = 300
    max_steps: int = 6000
    max_tokens: int = 128  # longer sentences are cut (their tail is not trained on)
    mask_prob: float = 0.0  # share of generator-trained positions shown as [MASK]
    copy_rate: float = 0.15  # share of correct characters the generator also learns to reproduce
    det_weight: float = 5.0  # detection loss weight
    mft_rate: float = 0.0  # masked fine-tuning: share of correct characters shown as [MASK] for the generator to
    #                        restore (no detection loss there) on masked steps; 0 = off
    mft_step_share: float = 1.0  # share of steps that are masked steps (when mft_rate > 0)
    target_copy_share: float = 0.0  # share of steps whose pairs are target -> target copies (nothing to correct)
    generator_body: str = "discriminator"  # the corrector is the discriminator's body with a generator head (one
    #                              network, two heads, the pretrained generator's 1/4-width body set aside); "own":
    #                              the pretrained generator
    bucket_batches: int = 64  # batches' worth of pairs of similar length a batch is drawn from (0: any pairs)
    seed: int = 1234
    log_every: int = 20
    eval_every: int = 300
    ckpt_every: int = 100
    snapshot_every: int = 0  # keep the pair (with its provenance) every this many steps in snapshots/; 0 = none


class CscModel(nn.Module):
    def __init__(self, gen: ElectraForMaskedLM, disc: ElectraForPreTraining):
        super().__init__()
        self.gen, self.disc = gen, disc

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, editable: torch.Tensor, train_pos: torch.Tensor,
                show_mask: torch.Tensor, det_weight: float, mft_mask: torch.Tensor | None = None
                ) -> dict[str, torch.Tensor]:
        """``mft_mask``: correct characters both networks see as [MASK] (masked fine-tuning); the generator
        restores them and the detector is not trained there."""
        attn = (src != SPECIAL_IDS["[PAD]"]).long()
        wrong = (src != tgt) & editable
        keep = attn.bool()
        seen = src
        if mft_mask is not None and not bool(mft_mask.any()):
            mft_mask = None  # nothing drawn this step
        if mft_mask is not None:
            seen = torch.where(mft_mask, torch.full_like(src, SPECIAL_IDS["[MASK]"]), src)
            keep = keep & ~mft_mask
            train_pos = train_pos | mft_mask
        # detection: every real token (but the masked-for-the-generator ones), label = wrong
        h_disc = self.disc.electra(input_ids=seen, attention_mask=attn).last_hidden_state
        d_logits = self.disc.discriminator_predictions(h_disc).float()
        det = F.binary_cross_entropy_with_logits(d_logits[keep], wrong[keep].float())
        # correction: errors (+ sampled correct characters), masked or as they are
        masked = train_pos & show_mask
        if self.gen.electra is self.disc.electra and not bool(masked.any()):
            h = h_disc[train_pos]  # one body, nothing more masked: the detection pass serves both heads
        else:
            gen_in = torch.where(masked, torch.full_like(src, SPECIAL_IDS["[MASK]"]), seen)
            h = self.gen.electra(input_ids=gen_in, attention_mask=attn).last_hidden_state[train_pos]
        logits = generator_head(self.gen, h).float()
        targets = tgt[train_pos]
        cor = F.cross_entropy(logits, targets) if len(targets) else logits.sum() * 0
        with torch.no_grad():
            w = wrong[train_pos]
            stats = {"cor_acc_err": ((logits.argmax(-1) == targets) & w).sum() / w.sum().clamp(min=1)}
            if mft_mask is not None:
                m = mft_mask[train_pos]
                stats["cor_acc_mft"] = ((logits.argmax(-1) == targets) & m).sum() / m.sum().clamp(min=1)
        return {"loss": cor + det_weight * det, "cor": cor, "det": det, **stats}


def length_buckets(data: EncodedPairs, batch_size: int, batches_per_bucket: int) -> list[np.ndarray]:
    """Pair indices sorted by length, cut into buckets of ``batch_size * batches_per_bucket``: a batch drawn
    from one bucket is padded to about its own length, not to the longest sentence of the whole set (two
    to three times fewer tokens per step on these sentences of 5 to 120 characters). One bucket of all
    pairs when ``batches_per_bucket`` is 0."""
    order = np.argsort([len(x) for x in data.src], kind="stable")
    size = batch_size * batches_per_bucket if batches_per_bucket > 0 else len(order)
    return [order[s : s + size] for s in range(0, len(order), max(size, 1))]


def generator_positions(src: np.ndarray, tgt: np.ndarray, editable: np.ndarray, rng: np.random.Generator,
                        cfg: FinetuneConfig) -> tuple[np.ndarray, np.ndarray]:
    wrong = (src != tgt) & editable
    train_pos = wrong | (editable & (rng.random(src.shape) < cfg.copy_rate))
    show_mask = rng.random(src.shape) < cfg.mask_prob
    return train_pos, show_mask


def step_kind(rng: np.random.Generator, cfg: FinetuneConfig) -> str:
    """What this step trains on: its pairs as they are ("plain"), with correct characters masked ("masked",
    when ``mft_rate`` > 0) or as target -> target copies ("copy"). No draw at all when neither is on, so runs
    without masked fine-tuning keep their random stream."""
    if cfg.mft_rate <= 0 and cfg.target_copy_share <= 0:
        return "plain"
    u = rng.random()
    if cfg.mft_rate > 0 and u < cfg.mft_step_share:
        return "masked"
    if u >= 1.0 - cfg.target_copy_share:
        return "copy"
    return "plain"


def mft_positions(src: np.ndarray, tgt: np.ndarray, editable: np.ndarray, rng: np.random.Generator,
                  rate: float) -> np.ndarray:
    """Correct editable characters drawn with probability ``rate``: masked fine-tuning's [MASK] positions."""
    return (src == tgt) & editable & (rng.random(src.shape) < rate)


@torch.no_grad()
def dev_metrics(model: CscModel, dev: EncodedPairs, rt: runtime.Runtime, threshold: float = 0.5,
                batch_size: int = 64) -> dict[str, float]:
    """Sentence-level strict F1 of a simple decoder (flag > threshold, generator top-1 as it is) plus
    token-level detection F1. A cheap proxy for training.fitting.evaluate, good enough to pick checkpoints."""
    model.eval()
    tp_d = fp_d = fn_d = 0
    sent_tp = sent_pred = sent_gold = 0
    by_length = np.argsort([len(x) for x in dev.src], kind="stable")  # little padding; sums ignore the order
    for s in range(0, len(dev), batch_size):
        src, tgt, editable = collate(dev, by_length[s : s + batch_size])
        src_t, tgt_t, ed_t = (torch.as_tensor(a, device=rt.device) for a in (src, tgt, editable))
        attn = (src_t != 0).long()
        # fp32 at any --precision, so that the dev proxy that picks out/best does not depend on it
        p = torch.sigmoid(model.disc(input_ids=src_t, attention_mask=attn).logits.float())
        h = model.gen.electra(input_ids=src_t, attention_mask=attn).last_hidden_state
        top1 = generator_head(model.gen, h).argmax(-1)
        flag = (p > threshold) & ed_t & (top1 != src_t)
        wrong = (src_t != tgt_t) & ed_t
        tp_d += int((flag & wrong).sum())
        fp_d += int((flag & ~wrong).sum())
        fn_d += int((~flag & wrong).sum())
        pred = torch.where(flag, top1, src_t)
        for r in range(len(src)):
            has_pred, has_gold = bool(flag[r].any()), bool(wrong[r].any())
            sent_pred += has_pred
            sent_gold += has_gold
            sent_tp += has_gold and has_pred and bool((pred[r] == tgt_t[r]).all())
    model.train()
    f1 = lambda p, r: 2 * p * r / (p + r) if p + r else 0.0  # noqa: E731
    dp, dr = tp_d / max(1, tp_d + fp_d), tp_d / max(1, tp_d + fn_d)
    sp, sr = sent_tp / max(1, sent_pred), sent_tp / max(1, sent_gold)
    return {"dev_det_f1": f1(dp, dr), "dev_cor_p": sp, "dev_cor_r": sr, "dev_cor_f1": f1(sp, sr)}


def reinit_discriminator_encoder(disc: ElectraForPreTraining) -> None:
    """Fresh encoder layers and head; keeps the (generator-trained, shared) embeddings. For a pretrained
    discriminator whose representations collapsed (every position the same), which fine-tuning cannot undo."""
    fresh = ElectraForPreTraining(disc.config)
    disc.electra.encoder.load_state_dict(fresh.electra.encoder.state_dict())
    disc.discriminator_predictions.load_state_dict(fresh.discriminator_predictions.state_dict())


def generator_on_discriminator(gen: ElectraForMaskedLM, disc: ElectraForPreTraining) -> ElectraForMaskedLM:
    """A generator whose body *is* the discriminator's (one module, so one forward pass can serve detection and
    correction): the discriminator's width and depth, a new prediction head (its LayerNorm and output bias taken
    from ``gen``), the output tied to the shared embeddings. ``gen``'s own narrow body is set aside. A ``gen`` that
    already sits on an equal body (a pair saved from such a run) keeps its head and is tied to ``disc`` again."""
    if shares_body(disc, gen):
        gen.electra = disc.electra
        tie_embeddings(gen, disc)
        return gen
    wide = ElectraForMaskedLM(disc.config)
    wide.electra = disc.electra
    tie_embeddings(wide, disc)
    with torch.no_grad():
        wide.generator_lm_head.bias.copy_(gen.generator_lm_head.bias)
        wide.generator_predictions.LayerNorm.load_state_dict(gen.generator_predictions.LayerNorm.state_dict())
    return wide


def load_init(init: Path | None, scratch: str | None) -> tuple[ElectraForMaskedLM, ElectraForPreTraining, dict]:
    if scratch:
        gen, disc = build_models(get_config(scratch))
        gen.electra.embeddings = type(disc.electra.embeddings)(gen.config)  # untie: train both freely
        gen.electra.embeddings.load_state_dict(disc.electra.embeddings.state_dict())
        gen.generator_lm_head.weight = gen.electra.embeddings.word_embeddings.weight
        return gen, disc, {"pretrained": False, "config": scratch}
    assert init is not None
    disc = ElectraForPreTraining.from_pretrained(init / "discriminator", dtype=torch.float32)
    gen = ElectraForMaskedLM.from_pretrained(init / "generator", dtype=torch.float32)
    prov = loop.read_provenance(init)
    if "finetune" in prov:  # init is itself a fine-tuned pair: keep the earlier stage(s) on record
        prov["finetune_stages"] = [*prov.get("finetune_stages", []), {"init": prov.get("init"), **prov.pop("finetune")}]
    return gen, disc, {"pretrained": True, **prov, "init": str(init)}


# may differ from the checkpoint's on resume (applied and logged); every other setting is fixed for the run
RESUME_MUTABLE = ("max_steps", "lr", "warmup_steps", "log_every", "eval_every", "ckpt_every", "snapshot_every")


def train(cfg: FinetuneConfig, args: argparse.Namespace, given: set[str] | None = None) -> dict:
    """Fine-tune into args.out (resuming from out/ckpt.pt). ``given``: the config fields set on the command
    line (None = all of them), which a resumed run must not silently override."""
    rt = runtime.setup_runtime(args.device, args.threads, args.precision)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path = out / "ckpt.pt"
    resume = loop.load_checkpoint(ckpt_path) if ckpt_path.exists() else None
    if resume:
        cfg = loop.resume_config(FinetuneConfig, cfg, resume["train_config"],
                                 {f.name for f in fields(FinetuneConfig)} if given is None else given,
                                 RESUME_MUTABLE, ckpt_path)
    np_rng = loop.seed_everything(cfg.seed)
    gen, disc, init_info = load_init(args.init, args.from_scratch)
    if args.reinit_discriminator and not resume:
        torch.manual_seed(cfg.seed)
        reinit_discriminator_encoder(disc)
        init_info["discriminator_encoder"] = "re-initialised before fine-tuning (pretrained one had collapsed)"
    if cfg.generator_body == "discriminator":
        if not resume:
            torch.manual_seed(cfg.seed)
        gen = generator_on_discriminator(gen, disc)
        init_info["generator_body"] = "the discriminator's (one body, two heads)"
    elif cfg.generator_body not in GENERATOR_BODIES:
        raise SystemExit(f"--generator-body must be one of {', '.join(GENERATOR_BODIES)}, got {cfg.generator_body!r}")
    model = CscModel(gen, disc).to(rt.device)
    vocab_path = (args.vocab or (args.init / "discriminator" / "vocab.txt" if args.init else None))
    if vocab_path is None or not Path(vocab_path).exists():
        raise SystemExit("--vocab is required (no vocab.txt in the init directory)")
    max_tokens = min(cfg.max_tokens, disc.config.max_position_embeddings)
    train_data = encode_pairs(read_pairs(args.train, args.limit), vocab_path, max_tokens)
    dev_data = encode_pairs(read_pairs(args.dev, 2000), vocab_path, max_tokens)
    opt = loop.make_optimizer(model, cfg.lr, cfg.weight_decay, rt.device)
    step, best, elapsed_before, tokens_seen = 0, -1.0, 0.0, 0
    if resume:
        model.load_state_dict(resume["model"])
        opt.load_state_dict(resume["optimizer"])
        step, best, elapsed_before = resume["step"], resume["best"], resume["elapsed_s"]
        tokens_seen = resume.get("tokens_seen", 0)
        loop.restore_rng(resume["rng"], np_rng)
    log = loop.MetricsLog(out / "metrics.jsonl")
    print(f"{len(train_data)} training pairs, {len(dev_data)} dev pairs; step {step}/{cfg.max_steps}")

    hardware = f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, {rt.device_name}, {rt.precision}"
    ledger = loop.Ledger(out / "ledger.json", step=step, tokens=tokens_seen, hardware=hardware)

    def state() -> dict:
        return {"best": best, "rng": loop.rng_state(np_rng), "train_config": asdict(cfg), "tokens_seen": tokens_seen}

    runner = loop.StepRunner(model, opt, lr=cfg.lr, warmup_steps=cfg.warmup_steps, max_steps=cfg.max_steps,
                             ckpt_path=ckpt_path, ckpt_every=cfg.ckpt_every, state=state,
                             max_minutes=args.max_minutes, stop_after=args.stop_after, step=step,
                             elapsed_before=elapsed_before, desc="finetune", fit_minutes=args.fit_minutes,
                             on_schedule=lambda n: setattr(cfg, "max_steps", n))

    buckets = length_buckets(train_data, cfg.batch_size, cfg.bucket_batches)
    bucket_p = np.array([len(b) for b in buckets], dtype=np.float64) / len(train_data)

    def micro_step() -> dict[str, torch.Tensor]:
        nonlocal tokens_seen
        bucket = buckets[int(np_rng.choice(len(buckets), p=bucket_p))]
        idx = bucket[np_rng.integers(0, len(bucket), cfg.batch_size)]
        src, tgt, editable = collate(train_data, idx)
        tokens_seen += int((src != SPECIAL_IDS["[PAD]"]).sum())
        kind = step_kind(np_rng, cfg)
        if kind == "copy":
            src = tgt.copy()
        train_pos, show = generator_positions(src, tgt, editable, np_rng, cfg)
        mft = mft_positions(src, tgt, editable, np_rng, cfg.mft_rate) if kind == "masked" else None
        t = [torch.as_tensor(a, device=rt.device) for a in (src, tgt, editable, train_pos, show)]
        with rt.autocast():
            return model(*t, det_weight=cfg.det_weight,
                         mft_mask=None if mft is None else torch.as_tensor(mft, device=rt.device))

    def evaluate_and_keep_best(step: int) -> None:
        nonlocal best
        m = dev_metrics(model, dev_data, rt)
        log.write(step=step, **m)
        if m["dev_cor_f1"] > best:
            best = m["dev_cor_f1"]
            loop.save_pair(model.gen, model.disc, out / "best", vocab_path)
        print(f"step {step}: " + " ".join(f"{k}={v:.3f}" for k, v in m.items()) + f" (best {best:.3f})", flush=True)

    def provenance(step: int, elapsed_s: float, kept: str) -> dict:
        return {**init_info,
                "finetune": {"steps": step, "config": asdict(cfg), "train_file": str(args.train), "train_pairs": len(train_data),
                             "dev_file": str(args.dev), "best_dev_cor_f1_proxy": round(best, 4), "kept": kept,
                             "elapsed_s": elapsed_s, "tokens_seen": tokens_seen, "ledger": ledger.summary()},
                "hardware": hardware}

    def plot() -> None:
        log.plot(out / "finetune.png", [("loss", ["cor", "det"]), ("dev", ["dev_det_f1", "dev_cor_f1", "cor_acc_err"])])

    def on_step(step: int, lr: float, stats: dict[str, float]) -> None:
        if step % cfg.log_every == 0:
            log.write(step=step, lr=lr, **stats)
        if step % cfg.eval_every == 0 or step == cfg.max_steps:
            evaluate_and_keep_best(step)
        if step % cfg.ckpt_every == 0 or (cfg.snapshot_every and step % cfg.snapshot_every == 0):
            ledger.update(step=step, tokens=tokens_seen)
        if cfg.snapshot_every and step % cfg.snapshot_every == 0:  # for dev F1 against steps with the full decoder
            loop.save_pair(model.gen, model.disc, out / "snapshots" / f"step{step:06d}", vocab_path,
                           provenance(step, round(runner.elapsed_s), "this step"))
        if step % cfg.ckpt_every == 0:
            plot()

    result = runner.run(micro_step, on_step)
    if best < 0:  # stopped before the first evaluation
        evaluate_and_keep_best(result.step)
        runner.checkpoint()
    ledger.update(step=result.step, tokens=tokens_seen)
    plot()
    for sub in ("discriminator", "generator"):
        shutil.rmtree(out / sub, ignore_errors=True)
    if args.keep == "last":
        loop.save_pair(model.gen, model.disc, out, vocab_path)
    else:
        for sub in ("discriminator", "generator"):
            shutil.copytree(out / "best" / sub, out / sub)
    kept = "the best step on the dev proxy" if args.keep == "best" else "the last step"
    loop.write_provenance(out, provenance(result.step, result.elapsed_s, kept))
    summary = {"step": result.step, "best_dev_cor_f1_proxy": best, "finished": result.finished}
    print(json.dumps(summary))
    return summary


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--init", type=Path, help="pretraining run folder with discriminator/ and generator/")
    src.add_argument("--from-scratch", metavar="CONFIG", help="random init of this model config (baseline)")
    ap.add_argument("--reinit-discriminator", action="store_true",
                    help="keep the pretrained embeddings but start the discriminator's encoder afresh")
    ap.add_argument("--vocab", type=Path, help="vocab.txt (default: the init discriminator's)")
    ap.add_argument("--train", type=Path, required=True, help="source<TAB>target training pairs")
    ap.add_argument("--dev", type=Path, required=True, help="source<TAB>target dev pairs (model selection)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=0, help="read at most this many training pairs")
    ap.add_argument("--stop-after", type=int, default=0,
                    help="stop (and checkpoint) after this many steps in this invocation; resume later")
    ap.add_argument("--max-minutes", type=float, default=0)
    ap.add_argument("--fit-minutes", type=float, default=0,
                    help="set --max-steps from the step rate measured early on so the schedule ends after this long")
    runtime.add_runtime_args(ap)
    ap.add_argument("--keep", choices=["best", "last"], default="last",
                    help="the pair written to --out: the best step on the dev proxy (best/ keeps it either way), or "
                         "the last step (the proxy, a thresholded top-1 decoder, is noisy next to the full pipeline)")
    for f in fields(FinetuneConfig):
        typ = {"int": int, "float": float, "str": str}[f.type] if isinstance(f.type, str) else f.type
        choices = GENERATOR_BODIES if f.name == "generator_body" else None
        ap.add_argument("--" + f.name.replace("_", "-"), type=typ, default=f.default, choices=choices)
    return ap


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    cfg = FinetuneConfig(**{f.name: getattr(args, f.name) for f in fields(FinetuneConfig)})
    given = loop.given_flags(parser(), argv) & {f.name for f in fields(FinetuneConfig)}
    train(cfg, args, given)


if __name__ == "__main__":
    main()
