"""ELECTRA pretraining (replaced-token detection) on the shards from ``training.data.prepare``.

    python -m training.networks.pretrain --data runs/data --out runs/pretrain --max-minutes 60  # cpu-g4
    torchrun --nproc_per_node 2 -m training.networks.pretrain ...     # DDP (gloo on CPU, nccl on CUDA)

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
from typing import cast

import numpy as np
import torch
from torch import nn

from corrector.text.tokenize import SPECIAL_IDS

from ..data.shards import TokenWindows, load_meta, load_vocab_list
from . import loop, runtime
from .modeling import (
    ModelConfig,
    count_params,
    get_config,
    tie_embeddings,
    warm_start_embeddings,
)
from .pretrain_init import FORK_FILE, fork, load_init_pair
from .pretrainer import ElectraPretrainer
from .rtd_health import CollapseGuard, representation_spread, rtd_auc, rtd_skill


@dataclass
class PretrainConfig:
    config: str = "cpu-g4"  # model shape, a name in training.networks.modeling.CONFIGS
    seq_len: int = 64  # tokens per training window ([CLS] included); CSC sentences are short
    batch_size: int = 64  # per process, per micro-step
    grad_accum: int = 1
    lr: float = 5e-4  # 1e-3 with 500 warmup steps collapsed the discriminator (all positions alike)
    weight_decay: float = 0.01
    warmup_steps: int = 300
    max_steps: int = 20000  # the schedule's length; a run may stop earlier with --max-minutes
    mask_rate: float = 0.15  # share of tokens the generator must fill (paper: 15% small, 25% large)
    mask_token_prob: float = 0.85  # of the masked tokens, the share shown as [MASK] (rest: unchanged)
    rtd_weight: float = 50.0  # λ, discriminator loss weight
    confusion_rate: float = 0.0  # share of corruptions drawn from the confusion table, not the generator
    warm_start: bool = True  # LAC-small character embeddings as the initial embedding table
    rtd_prior_bias: bool = True  # start the discriminator's output bias at the log-odds of the replaced share
    seed: int = 1234
    log_every: int = 20
    eval_every: int = 500
    ckpt_every: int = 200
    snapshot_tokens: int = 0  # keep a copy of the pair (and checkpoint) every this many tokens; 0 = none
    collapse_auc: float = 0.6  # after warmup, stop when the held-out RTD AUC is at most this ...
    collapse_std: float = 0.05  # ... and the top-layer representation spread at most this (twice in a row)

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> PretrainConfig:
        return cls(**{f.name: getattr(ns, f.name) for f in fields(cls)})


@torch.no_grad()
def init_rtd_prior_bias(disc: torch.nn.Module, replaced_share: float) -> None:
    """Start the RTD head's bias at the log-odds of the share of replaced tokens (an untrained generator
    almost never reproduces the original, so about ``mask_rate``), as detection heads are initialised for
    rare classes. From a zero bias the first thing the loss asks for is "lower every logit"; Adam moves each
    weight by about lr a step, so the many encoder weights achieve that long before the one bias does, by
    making every position the same vector: the discriminator collapses. Measured (cpu shape, batch 16,
    100 warmup steps, held-out at step 50): top-layer spread 0.011 / 0.000 at lr 1e-3 / 3e-3 from a zero
    bias, 0.60 / 0.55 from this one; RTD AUC 0.86 / 0.53 against 0.93 / 0.85."""
    p = min(max(replaced_share, 1e-4), 1 - 1e-4)
    head = cast(nn.Linear, cast(nn.Module, disc.discriminator_predictions).dense_prediction)
    head.bias.fill_(float(np.log(p / (1 - p))))


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
def evaluate(model: ElectraPretrainer, val: TokenWindows, cfg: PretrainConfig, rt: runtime.Runtime,
             batches: int = 8) -> dict[str, float]:
    """Mean losses and statistics over fixed held-out windows, the RTD AUC over all their tokens, and the
    spread of the discriminator's representations (top layer, plus every layer as a list) over them."""
    model.eval()
    rng = np.random.default_rng(0)  # the same validation windows every time
    acc: dict[str, float] = {}
    scores, labels, hidden = [], [], []
    for _ in range(batches):
        ids = val.batch(rng, cfg.batch_size)
        masked, show, conf = make_masks(ids, rng, cfg)
        t = [torch.as_tensor(a, device=rt.device) for a in (ids, masked, show, conf)]
        out = model(*t, details=True)  # fp32 at any --precision: held-out figures compare across runs
        scores.append(out.pop("scores").cpu())
        labels.append(out.pop("labels").cpu())
        hidden.append(out.pop("hidden")[:, :: max(1, batches)].cpu())  # a spread sample of tokens per batch
        for k, v in out.items():
            acc[f"val_{k}"] = acc.get(f"val_{k}", 0.0) + float(v) / batches
    model.train()
    acc["val_rtd_auc"] = rtd_auc(torch.cat(scores), torch.cat(labels))
    acc["val_rtd_skill"] = rtd_skill(acc["val_rtd"], acc["val_replaced"])
    layers = torch.cat(hidden, dim=1)
    spreads = [representation_spread(h) for h in layers]
    acc["val_top_std"], acc["val_top_cos"] = spreads[-1]["std"], spreads[-1]["cos"]
    acc["val_layer_std"] = [round(x["std"], 4) for x in spreads]  # type: ignore[assignment]
    acc["val_layer_cos"] = [round(x["cos"], 4) for x in spreads]  # type: ignore[assignment]
    return acc


# may differ from the checkpoint's on resume (applied and logged); every other setting is fixed for the run
RESUME_MUTABLE = ("max_steps", "lr", "warmup_steps", "log_every", "eval_every", "ckpt_every", "snapshot_tokens",
                  "collapse_auc", "collapse_std")
# an A/B arm (--fork-from a snapshot) may also change the corruption recipe, once, when it starts
FORK_MUTABLE = ("confusion_rate", "mask_rate", "mask_token_prob", "rtd_weight")


def train(cfg: PretrainConfig, data: Path, out: Path, max_minutes: float = 0, device: str = "auto",
          threads: int = 0, confusions_path: Path | None = None, compile_model: bool = False,
          stop_after: int = 0, given: set[str] | None = None, forking: bool = False, precision: str = "auto",
          init_from: Path | None = None, fit_minutes: float = 0, init_stack: bool = False) -> dict:
    """Pretrain into ``out`` (resuming from out/ckpt.pt). ``given``: the config fields set on the command
    line (None = all of them), which a resumed run must not silently override. ``forking``: the first
    invocation of an A/B arm, which may also change the recipe flags of ``FORK_MUTABLE``. ``init_from``: a
    pair folder the run starts from (ignored once the run has a checkpoint, which holds it)."""
    rt = runtime.setup_runtime(device, threads, precision)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path = out / "ckpt.pt"
    resume = loop.load_checkpoint(ckpt_path) if ckpt_path.exists() else None
    if resume:
        cfg = loop.resume_config(PretrainConfig, cfg, resume["train_config"],
                                 {f.name for f in fields(PretrainConfig)} if given is None else given,
                                 RESUME_MUTABLE + (FORK_MUTABLE if forking else ()), ckpt_path,
                                 log=print if rt.is_main else lambda _: None)
    np_rng = loop.seed_everything(cfg.seed + rt.rank)
    model_cfg = ModelConfig.from_dict(resume["model_config"]) if resume else get_config(cfg.config)
    meta = load_meta(data)
    if meta["vocab_size"] != model_cfg.vocab_size:
        raise SystemExit(f"vocab size {meta['vocab_size']} != model vocab size {model_cfg.vocab_size}")

    model = ElectraPretrainer(model_cfg, cfg.rtd_weight, load_confusions(confusions_path))
    init_info = load_init_pair(model, init_from, init_stack, data / "vocab.txt") if init_from and not resume else None
    model = model.to(rt.device)
    from_scratch = resume is None and init_info is None
    if from_scratch and cfg.warm_start:
        n = warm_start_embeddings(model.disc, load_vocab_list(data))
        if rt.is_main:
            print(f"warm start: {n} LAC character embeddings")
    if from_scratch and cfg.rtd_prior_bias:
        init_rtd_prior_bias(model.disc, cfg.mask_rate)
    opt = loop.make_optimizer(model, cfg.lr, cfg.weight_decay, rt.device)
    step, tokens_seen, elapsed_before = 0, 0, 0.0
    if resume:
        model.load_state_dict(resume["model"])
        tie_embeddings(model.gen, model.disc)
        opt.load_state_dict(resume["optimizer"])
        step, tokens_seen = resume["step"], resume["tokens_seen"]
        elapsed_before = resume.get("elapsed_s", 0.0)
        loop.restore_rng(resume["rng"][min(rt.rank, len(resume["rng"]) - 1)], np_rng)
        init_info = resume.get("init_from")
    elif init_info:
        tokens_seen = init_info["tokens_seen"]
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
              f" step {step}/{cfg.max_steps}, {tokens_seen / 1e6:.2f}M tokens seen, {rt.world_size} process(es)"
              f" on {rt.device}, {rt.precision}")
        (out / "config.json").write_text(json.dumps(
            {"model_config": model_cfg.to_dict(), "train_config": asdict(cfg)}, indent=2), encoding="utf-8")
    hardware = f"{platform.machine()}, {rt.world_size} x {rt.device_name} ({torch.get_num_threads()} threads, {rt.precision})"
    ledger = loop.Ledger(out / "ledger.json", step=step, tokens=tokens_seen, hardware=hardware) if rt.is_main else None
    fork_record = out / FORK_FILE
    forked = {"forked_from": json.loads(fork_record.read_text(encoding="utf-8"))} if fork_record.exists() else {}

    def provenance(step: int, finished: bool, elapsed_s: float) -> dict:
        return {"pretraining": {
            "step": step, "tokens_seen": tokens_seen, "elapsed_s": round(elapsed_s), "finished": finished,
            "corpus": meta.get("corpus_files"), "model_config": cfg.config, "seq_len": cfg.seq_len,
            "confusion_rate": cfg.confusion_rate, "hardware": hardware, **forked,
            **({"init_from": init_info} if init_info else {}),
            **({"ledger": ledger.summary()} if ledger else {})}}

    def state() -> dict:
        rngs: list = [None] * rt.world_size
        mine = loop.rng_state(np_rng)
        if rt.ddp:
            torch.distributed.all_gather_object(rngs, mine)
        else:
            rngs = [mine]
        return {"tokens_seen": tokens_seen, "rng": rngs, "model_config": model_cfg.to_dict(),
                "train_config": asdict(cfg), **({"init_from": init_info} if init_info else {})}

    def fitted(max_steps: int) -> None:
        cfg.max_steps = max_steps
        if rt.is_main:
            (out / "config.json").write_text(json.dumps(
                {"model_config": model_cfg.to_dict(), "train_config": asdict(cfg)}, indent=2), encoding="utf-8")

    runner = loop.StepRunner(model, opt, lr=cfg.lr, warmup_steps=cfg.warmup_steps, max_steps=cfg.max_steps,
                             ckpt_path=ckpt_path, ckpt_every=cfg.ckpt_every, state=state, max_minutes=max_minutes,
                             stop_after=stop_after, step=step, elapsed_before=elapsed_before, is_main=rt.is_main,
                             desc="pretrain", fit_minutes=fit_minutes, on_schedule=fitted)
    guard = CollapseGuard(after_step=cfg.warmup_steps, max_auc=cfg.collapse_auc, max_std=cfg.collapse_std)
    window = {"t": time.time(), "tok": 0}

    def plot() -> None:
        log.plot(out / "pretrain.png", [("loss", ["mlm", "val_mlm"]), ("RTD loss", ["rtd", "val_rtd"]),
                                        ("accuracy", ["mlm_acc", "rtd_acc", "val_mlm_acc", "val_rtd_acc"]),
                                        ("discriminator health", ["val_rtd_auc", "val_top_std", "val_top_cos"])])

    def micro_step() -> dict[str, torch.Tensor]:
        nonlocal tokens_seen
        ids = train_data.batch(np_rng, cfg.batch_size)
        masked, show, conf = make_masks(ids, np_rng, cfg)
        t = [torch.as_tensor(a, device=rt.device) for a in (ids, masked, show, conf)]
        with rt.autocast():
            res = fwd(*t)
        n_tok = int((ids != 0).sum()) * rt.world_size
        tokens_seen += n_tok
        window["tok"] += n_tok
        return res

    def on_step(step: int, lr: float, stats: dict[str, float]) -> None:
        if step % cfg.log_every == 0:
            tps = window["tok"] / max(1e-9, time.time() - window["t"])
            window.update(t=time.time(), tok=0)
            log.write(step=step, tokens=tokens_seen, lr=lr, tok_per_s=tps, **stats)
        if step % cfg.eval_every == 0:
            with torch.random.fork_rng(devices=[]):  # evaluation must not shift the training RNG stream
                m = evaluate(model, val_data, cfg, rt)
            log.write(step=step, tokens=tokens_seen, **m)
            if rt.is_main:
                print(f"step {step} ({tokens_seen / 1e6:.2f}M tokens): val mlm_acc {m['val_mlm_acc']:.3f} "
                      f"rtd {m['val_rtd']:.3f} (skill {m['val_rtd_skill']:.3f}) auc {m['val_rtd_auc']:.3f} top-layer std {m['val_top_std']:.3f} "
                      f"cos {m['val_top_cos']:.3f}", flush=True)
            reason = guard.check(step, m["val_rtd_auc"], m["val_top_std"])
            if reason:
                runner.stop(reason)
        if cfg.snapshot_tokens and tokens_seen >= next_snapshot[0]:
            mark = tokens_seen // cfg.snapshot_tokens * cfg.snapshot_tokens
            next_snapshot[0] = mark + cfg.snapshot_tokens
            runner.checkpoint()
            if rt.is_main:
                snap = out / "snapshots" / f"tok{mark / 1e6:06.1f}M"
                if ledger:
                    ledger.update(step=step, tokens=tokens_seen)
                loop.save_pair(model.gen, model.disc, snap, data / "vocab.txt", provenance(step, False, runner.elapsed_s))
                shutil.copyfile(ckpt_path, snap / "ckpt.pt")  # a fork point for A/B arms
        if step % cfg.ckpt_every == 0:
            plot()
            if ledger:
                ledger.update(step=step, tokens=tokens_seen)

    next_snapshot = [(tokens_seen // cfg.snapshot_tokens + 1) * cfg.snapshot_tokens if cfg.snapshot_tokens else 0]
    result = runner.run(micro_step, on_step, accum=cfg.grad_accum)
    plot()
    if ledger:
        ledger.update(step=result.step, tokens=tokens_seen)
    summary = {"step": result.step, "tokens_seen": tokens_seen, "elapsed_s": result.elapsed_s,
               "finished": result.finished}
    if rt.is_main and result.stopped is None:
        loop.save_pair(model.gen, model.disc, out, data / "vocab.txt",
                       provenance(result.step, result.finished, result.elapsed_s))
    if rt.is_main:
        print(json.dumps(summary), flush=True)
    fwd = None  # type: ignore[assignment]  # the DDP wrapper (and its reducer) goes before its process group
    runtime.teardown(rt)
    if result.stopped:
        raise SystemExit(f"stopped: {result.stopped} (checkpoint kept in {ckpt_path}; no pair saved)")
    return summary


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="folder written by training.data.prepare")
    ap.add_argument("--out", type=Path, required=True, help="run folder (checkpoint, metrics, HF dirs)")
    ap.add_argument("--stop-after", type=int, default=0,
                    help="stop (and checkpoint) after this many steps in this invocation; resume later")
    ap.add_argument("--max-minutes", type=float, default=0, help="stop (and checkpoint) after this long; 0 = no limit")
    ap.add_argument("--fit-minutes", type=float, default=0,
                    help="set --max-steps from the step rate measured early on so the schedule ends after this long")
    runtime.add_runtime_args(ap)
    ap.add_argument("--confusions", type=Path, default=None,
                    help="confusion table .npy from training.evidence.similarity (needed for --confusion-rate > 0)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (helps on CUDA)")
    ap.add_argument("--init-from", type=Path, default=None,
                    help="start a new run from this pair folder's networks (continued pretraining with its own "
                         "schedule, batch and rate; tokens count on from the pair's)")
    ap.add_argument("--init-stack", action="store_true",
                    help="with --init-from: the pair is shallower than --config (the same width); each encoder layer i "
                         "starts as its layer i mod its depth (progressive stacking: training.networks.stacking)")
    ap.add_argument("--fork-from", type=Path, default=None,
                    help="start --out as an A/B arm from this snapshot (or run) folder's ckpt.pt; the arm may change "
                         + ", ".join("--" + m.replace("_", "-") for m in FORK_MUTABLE)
                         + " once; re-running the same command resumes the arm")
    for f in fields(PretrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            ap.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            typ = {"int": int, "float": float, "str": str}[f.type] if isinstance(f.type, str) else f.type
            ap.add_argument(flag, type=typ, default=f.default)
    return ap


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    cfg = PretrainConfig.from_args(args)
    if cfg.confusion_rate > 0 and args.confusions is None:
        raise SystemExit("--confusion-rate needs --confusions")
    given = loop.given_flags(parser(), argv) & {f.name for f in fields(PretrainConfig)}
    if args.fork_from and args.init_from:
        raise SystemExit("--fork-from and --init-from: one or the other (a fork continues a run, an init starts one)")
    if args.init_stack and not args.init_from:
        raise SystemExit("--init-stack stacks the pair of --init-from: give it")
    forking = fork(args.fork_from, args.out) if args.fork_from else False
    train(cfg, args.data, args.out, args.max_minutes, args.device, args.threads, args.confusions, args.compile,
          args.stop_after, given, forking, args.precision, args.init_from, args.fit_minutes, args.init_stack)


if __name__ == "__main__":
    main()
