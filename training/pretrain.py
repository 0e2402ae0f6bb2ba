"""ELECTRA pretraining (replaced-token detection) on the shards from ``training.prepare``.

    python -m training.pretrain --data runs/data --out runs/pretrain --config cpu --max-minutes 60
    torchrun --nproc_per_node 2 -m training.pretrain ...     # DDP (gloo on CPU, nccl on CUDA)

One step: mask → generator MLM at the masked positions only → sample replacements without grad
(optionally part of them from the pinyin/shape confusion table) → discriminator labels every
token real/replaced → loss = MLM + λ·RTD. Re-running the same command resumes from out/ckpt.pt.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from corrector.tokenize import SPECIAL_IDS

from . import loop
from .data import TokenWindows, load_meta, load_vocab_list
from .modeling import (
    ModelConfig,
    build_models,
    count_params,
    get_config,
    tie_embeddings,
    warm_start_embeddings,
)


@dataclass
class PretrainConfig:
    config: str = "cpu"  # model shape, a name in training.modeling.CONFIGS
    seq_len: int = 64  # tokens per training window ([CLS] included); CSC sentences are short
    batch_size: int = 64  # per process, per micro-step
    grad_accum: int = 1
    lr: float = 5e-4  # 1e-3 with 500 warmup steps collapsed the discriminator (all positions alike)
    weight_decay: float = 0.01
    warmup_steps: int = 2000
    max_steps: int = 20000  # the schedule's length; a run may stop earlier with --max-minutes
    mask_rate: float = 0.15  # share of tokens the generator must fill (paper: 15% small, 25% large)
    mask_token_prob: float = 0.85  # of the masked tokens, the share shown as [MASK] (rest: unchanged)
    rtd_weight: float = 50.0  # λ, discriminator loss weight
    confusion_rate: float = 0.0  # share of corruptions drawn from the confusion table, not the generator
    warm_start: bool = True  # LAC-small character embeddings as the initial embedding table
    seed: int = 1234
    log_every: int = 20
    eval_every: int = 500
    ckpt_every: int = 200

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> PretrainConfig:
        return cls(**{f.name: getattr(ns, f.name) for f in fields(cls)})


class ElectraPretrainer(nn.Module):
    """Generator + discriminator with shared embeddings; ``forward`` is one RTD step."""

    def __init__(self, cfg: ModelConfig, rtd_weight: float, confusions: torch.Tensor | None = None):
        super().__init__()
        self.gen, self.disc = build_models(cfg)
        self.rtd_weight = rtd_weight
        self.register_buffer("confusions", confusions if confusions is not None else torch.zeros(0, 0, dtype=torch.long),
                             persistent=False)

    def forward(self, ids: torch.Tensor, masked: torch.Tensor, show_mask: torch.Tensor,
                use_confusion: torch.Tensor) -> dict[str, torch.Tensor]:
        attn = (ids != SPECIAL_IDS["[PAD]"]).long()
        # 1. mask
        gen_in = torch.where(masked & show_mask, torch.full_like(ids, SPECIAL_IDS["[MASK]"]), ids)
        # 2. generator: vocabulary logits only where a token was masked
        h = self.gen.electra(input_ids=gen_in, attention_mask=attn).last_hidden_state[masked]
        logits = self.gen.generator_lm_head(self.gen.generator_predictions(h)).float()
        targets = ids[masked]
        mlm = F.cross_entropy(logits, targets)
        # 3. sample replacements without gradient
        with torch.no_grad():
            sampled = sample_from_logits(logits)
            if self.confusions.numel():
                sampled = self._confuse(targets, sampled, use_confusion[masked])
            fake = ids.clone()
            fake[masked] = sampled
            labels = (fake != ids).float()  # a sample equal to the original counts as real
        # 4. discriminate
        d_logits = self.disc(input_ids=fake, attention_mask=attn).logits.float()
        keep = attn.bool()
        rtd = F.binary_cross_entropy_with_logits(d_logits[keep], labels[keep])
        with torch.no_grad():
            pred = (d_logits[keep] > 0).float()
            lab = labels[keep]
            stats = {
                "mlm_acc": (logits.argmax(-1) == targets).float().mean(),
                "rtd_acc": (pred == lab).float().mean(),
                "rtd_recall": (pred * lab).sum() / lab.sum().clamp(min=1),
                "replaced": lab.mean(),
            }
        return {"loss": mlm + self.rtd_weight * rtd, "mlm": mlm, "rtd": rtd, **stats}

    def _confuse(self, targets: torch.Tensor, sampled: torch.Tensor, use: torch.Tensor) -> torch.Tensor:
        table = self.confusions[targets]  # (M, K), -1 = no neighbour
        n_valid = (table >= 0).sum(-1)
        use = use & (n_valid > 0)
        if not use.any():
            return sampled
        pick = (torch.rand(len(targets), device=targets.device) * n_valid.clamp(min=1)).long()
        alt = table.gather(1, pick[:, None]).squeeze(1)
        return torch.where(use, alt, sampled)


def sample_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """One draw per row by inverse CDF (much cheaper on CPU than torch.multinomial over 21k columns)."""
    cdf = F.softmax(logits, -1).cumsum(-1)
    u = torch.rand(len(logits), 1, device=logits.device) * cdf[:, -1:]
    return torch.searchsorted(cdf, u).squeeze(-1).clamp_(max=logits.shape[-1] - 1)


def make_masks(ids: np.ndarray, rng: np.random.Generator, cfg: PretrainConfig) -> tuple[np.ndarray, ...]:
    maskable = ids > SPECIAL_IDS["[MASK]"]  # never [PAD], [CLS], [SEP], [UNK] or unused slots
    masked = (rng.random(ids.shape) < cfg.mask_rate) & maskable
    # at least one masked token per row keeps the generator's batch non-empty
    for r in np.flatnonzero(~masked.any(1) & maskable.any(1)):
        masked[r, rng.choice(np.flatnonzero(maskable[r]))] = True
    show_mask = rng.random(ids.shape) < cfg.mask_token_prob
    use_conf = rng.random(ids.shape) < cfg.confusion_rate
    return masked, show_mask, use_conf


def load_confusions(path: Path | None) -> torch.Tensor | None:
    if path is None:
        return None
    return torch.as_tensor(np.load(path), dtype=torch.long)


@torch.no_grad()
def evaluate(model: ElectraPretrainer, val: TokenWindows, cfg: PretrainConfig, rt: loop.Runtime,
             batches: int = 8) -> dict[str, float]:
    model.eval()
    rng = np.random.default_rng(0)  # the same validation windows every time
    acc: dict[str, float] = {}
    for _ in range(batches):
        ids = val.batch(rng, cfg.batch_size)
        masked, show, conf = make_masks(ids, rng, cfg)
        t = [torch.as_tensor(a, device=rt.device) for a in (ids, masked, show, conf)]
        with rt.autocast():
            out = model(*t)
        for k, v in out.items():
            acc[f"val_{k}"] = acc.get(f"val_{k}", 0.0) + float(v) / batches
    model.train()
    return acc


def save_pretrained_pair(model: ElectraPretrainer, out: Path, data: Path, provenance: dict) -> None:
    """Discriminator and generator as two ordinary Hugging Face directories (+ vocab, provenance)."""
    for sub, m in (("discriminator", model.disc), ("generator", model.gen)):
        m.save_pretrained(out / sub)
        shutil.copyfile(data / "vocab.txt", out / sub / "vocab.txt")
    (out / "provenance.json").write_text(json.dumps(provenance, indent=2, ensure_ascii=False), encoding="utf-8")


def train(cfg: PretrainConfig, data: Path, out: Path, max_minutes: float = 0, device: str = "auto",
          threads: int = 0, confusions_path: Path | None = None, compile_model: bool = False,
          stop_after: int = 0) -> dict:
    rt = loop.setup_runtime(device, threads)
    np_rng = loop.seed_everything(cfg.seed + rt.rank)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path = out / "ckpt.pt"
    resume = loop.load_checkpoint(ckpt_path) if ckpt_path.exists() else None
    model_cfg = ModelConfig.from_dict(resume["model_config"]) if resume else get_config(cfg.config)
    if resume:
        cfg = PretrainConfig(**{**asdict(cfg), **resume["train_config"], "config": cfg.config})
    meta = load_meta(data)
    if meta["vocab_size"] != model_cfg.vocab_size:
        raise SystemExit(f"vocab size {meta['vocab_size']} != model vocab size {model_cfg.vocab_size}")

    model = ElectraPretrainer(model_cfg, cfg.rtd_weight, load_confusions(confusions_path)).to(rt.device)
    if not resume and cfg.warm_start:
        n = warm_start_embeddings(model.disc, load_vocab_list(data))
        if rt.is_main:
            print(f"warm start: {n} LAC character embeddings")
    opt = loop.make_optimizer(model, cfg.lr, cfg.weight_decay, rt.device)
    step, tokens_seen, elapsed_before = 0, 0, 0.0
    if resume:
        model.load_state_dict(resume["model"])
        tie_embeddings(model.gen, model.disc)
        opt.load_state_dict(resume["optimizer"])
        step, tokens_seen = resume["step"], resume["tokens_seen"]
        elapsed_before = resume.get("elapsed_s", 0.0)
        loop.restore_rng(resume["rng"][min(rt.rank, len(resume["rng"]) - 1)], np_rng)
    fwd = torch.compile(model) if compile_model else model
    if rt.ddp:
        fwd = torch.nn.parallel.DistributedDataParallel(
            fwd, device_ids=[rt.local_rank] if rt.device.type == "cuda" else None)

    train_data = TokenWindows(data, "train", cfg.seq_len)
    val_data = TokenWindows(data, "val", cfg.seq_len)
    log = loop.MetricsLog(out / "metrics.jsonl", enabled=rt.is_main)
    if rt.is_main:
        n_gen = count_params(model.gen) - count_params(model.gen.electra.embeddings)
        print(f"discriminator {count_params(model.disc) / 1e6:.2f}M params, generator (own) {n_gen / 1e6:.2f}M;"
              f" step {step}/{cfg.max_steps}, {rt.world_size} process(es) on {rt.device}")
        (out / "config.json").write_text(json.dumps(
            {"model_config": model_cfg.to_dict(), "train_config": asdict(cfg)}, indent=2), encoding="utf-8")

    t_start = time.time()
    deadline = t_start + max_minutes * 60 if max_minutes else float("inf")
    bar = tqdm(total=cfg.max_steps, initial=step, desc="pretrain", disable=not rt.is_main, unit="step")
    window_t, window_tok = time.time(), 0

    def checkpoint() -> None:
        rngs = [None] * rt.world_size
        mine = loop.rng_state(np_rng)
        if rt.ddp:
            torch.distributed.all_gather_object(rngs, mine)
        else:
            rngs = [mine]
        if rt.is_main:
            loop.save_checkpoint(ckpt_path, model=model.state_dict(), optimizer=opt.state_dict(), step=step,
                                 tokens_seen=tokens_seen, rng=rngs, model_config=model_cfg.to_dict(),
                                 train_config=asdict(cfg), elapsed_s=elapsed_before + time.time() - t_start)
            log.plot(out / "pretrain.png", [("loss", ["mlm", "val_mlm"]), ("RTD loss", ["rtd", "val_rtd"]),
                                            ("accuracy", ["mlm_acc", "rtd_acc", "val_mlm_acc", "val_rtd_acc"])])

    last_step = min(cfg.max_steps, step + stop_after) if stop_after else cfg.max_steps
    while step < last_step and time.time() < deadline:
        lr = loop.lr_at(step, cfg.lr, cfg.warmup_steps, cfg.max_steps)
        for g in opt.param_groups:
            g["lr"] = lr
        sums: dict[str, float] = {}
        for _ in range(cfg.grad_accum):
            ids = train_data.batch(np_rng, cfg.batch_size)
            masked, show, conf = make_masks(ids, np_rng, cfg)
            t = [torch.as_tensor(a, device=rt.device) for a in (ids, masked, show, conf)]
            with rt.autocast():
                out_d = fwd(*t)
            (out_d["loss"] / cfg.grad_accum).backward()
            for k, v in out_d.items():
                sums[k] = sums.get(k, 0.0) + float(v.detach()) / cfg.grad_accum
            n_tok = int((ids != 0).sum()) * rt.world_size
            tokens_seen += n_tok
            window_tok += n_tok
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        bar.update(1)
        if step % cfg.log_every == 0:
            tps = window_tok / max(1e-9, time.time() - window_t)
            window_t, window_tok = time.time(), 0
            bar.set_postfix(mlm=f"{sums['mlm']:.2f}", rtd=f"{sums['rtd']:.3f}", acc=f"{sums['rtd_acc']:.3f}",
                            tok_s=f"{tps:.0f}")
            log.write(step=step, tokens=tokens_seen, lr=lr, tok_per_s=tps, **sums)
        if step % cfg.eval_every == 0:
            with torch.random.fork_rng(devices=[]):  # evaluation must not shift the training RNG stream
                log.write(step=step, tokens=tokens_seen, **evaluate(model, val_data, cfg, rt))
        if step % cfg.ckpt_every == 0:
            checkpoint()
    bar.close()
    checkpoint()
    summary = {"step": step, "tokens_seen": tokens_seen, "elapsed_s": round(elapsed_before + time.time() - t_start),
               "finished": step >= cfg.max_steps}
    if rt.is_main:
        save_pretrained_pair(model, out, data, {"pretraining": {
            **summary, "corpus": meta.get("corpus_files"), "model_config": cfg.config,
            "seq_len": cfg.seq_len, "confusion_rate": cfg.confusion_rate,
            "hardware": f"{platform.machine()}, {rt.world_size} x {rt.device} ({torch.get_num_threads()} threads)"}})
    if rt.is_main:
        print(json.dumps(summary))
    del fwd  # the DDP wrapper (and its reducer) goes before its process group
    loop.teardown(rt)
    return summary


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="folder written by training.prepare")
    ap.add_argument("--out", type=Path, required=True, help="run folder (checkpoint, metrics, HF dirs)")
    ap.add_argument("--stop-after", type=int, default=0,
                    help="stop (and checkpoint) after this many steps in this invocation; resume later")
    ap.add_argument("--max-minutes", type=float, default=0, help="stop (and checkpoint) after this long; 0 = no limit")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch default)")
    ap.add_argument("--confusions", type=Path, default=None,
                    help="confusion table .npy from training.similarity (needed for --confusion-rate > 0)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (helps on CUDA)")
    for f in fields(PretrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            ap.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            typ = {"int": int, "float": float, "str": str}[f.type] if isinstance(f.type, str) else f.type
            ap.add_argument(flag, type=typ, default=f.default)
    return ap


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    cfg = PretrainConfig.from_args(args)
    if cfg.confusion_rate > 0 and args.confusions is None:
        raise SystemExit("--confusion-rate needs --confusions")
    train(cfg, args.data, args.out, args.max_minutes, args.device, args.threads, args.confusions, args.compile,
          args.stop_after)


if __name__ == "__main__":
    main()
