"""Model shapes and construction: one discriminator config; the generator is derived from it.

Both networks are plain Hugging Face classes (ElectraForPreTraining / ElectraForMaskedLM), so
checkpoints are ordinary ``save_pretrained`` directories.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn
from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

from corrector.text.tokenize import VOCAB_SIZE


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = VOCAB_SIZE
    embedding_size: int = 128  # shared by generator and discriminator (ELECTRA-small: 128)
    hidden_size: int = 256  # discriminator width
    num_layers: int = 12
    num_heads: int = 4
    intermediate_mult: int = 4  # FFN width = mult * hidden
    max_position: int = 128  # longest sequence, [CLS] and [SEP] included
    generator_hidden_fraction: float = 0.25  # generator width = fraction * discriminator width (paper: 1/4)
    generator_layers_fraction: float = 1.0  # generator depth = fraction * discriminator depth
    dropout: float = 0.1

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown model config keys: {sorted(unknown)}")
        return cls(**d)

    def to_dict(self) -> dict:
        return asdict(self)


CONFIGS: dict[str, ModelConfig] = {
    # seconds on a laptop CPU; used by the tests
    "debug": ModelConfig(embedding_size=32, hidden_size=64, num_layers=2, num_heads=2,
                         generator_hidden_fraction=0.5, max_position=64),
    # what 2 CPU cores can train in a few hours: 6 layers of ELECTRA-small width, generator half as wide
    "cpu": ModelConfig(num_layers=6, generator_hidden_fraction=0.5, max_position=128, dropout=0.0),
    # shape trials (docs/experiments/2026-11-pretraining.md): the same with a generator a quarter as wide, and ELECTRA-small's depth
    "cpu-g4": ModelConfig(num_layers=6, generator_hidden_fraction=0.25, max_position=128, dropout=0.0),
    "small-cpu": ModelConfig(num_layers=12, generator_hidden_fraction=0.25, max_position=128, dropout=0.0),
    # the capacity comparison (training/recipes/capacity.toml): cpu-g4 8 and 10 deep, stacked from a cpu-g4 pair
    "cpu-g4-8": ModelConfig(num_layers=8, generator_hidden_fraction=0.25, max_position=128, dropout=0.0),
    "cpu-g4-10": ModelConfig(num_layers=10, generator_hidden_fraction=0.25, max_position=128, dropout=0.0),
    # the debug shape twice as deep: a stacked start (training.networks.stacking) in the tests
    "debug-deep": ModelConfig(embedding_size=32, hidden_size=64, num_layers=4, num_heads=2,
                              generator_hidden_fraction=0.5, max_position=64),
    # ELECTRA-small (Clark et al. 2020): 12 x 256, embedding 128, generator 1/4 width
    "small": ModelConfig(),
    # ELECTRA-base: 12 x 768, embedding 768, generator 1/3 width
    "base": ModelConfig(embedding_size=768, hidden_size=768, num_heads=12, generator_hidden_fraction=1 / 3,
                        max_position=512),
}


def get_config(name_or_cfg: str | ModelConfig, **overrides) -> ModelConfig:
    cfg = CONFIGS[name_or_cfg] if isinstance(name_or_cfg, str) else name_or_cfg
    return replace(cfg, **overrides) if overrides else cfg


def _electra_config(cfg: ModelConfig, hidden: int, layers: int) -> ElectraConfig:
    heads = max(1, min(cfg.num_heads, hidden // 32)) if hidden < cfg.hidden_size else cfg.num_heads
    return ElectraConfig(
        vocab_size=cfg.vocab_size,
        embedding_size=cfg.embedding_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=cfg.intermediate_mult * hidden,
        max_position_embeddings=cfg.max_position,
        hidden_dropout_prob=cfg.dropout,
        attention_probs_dropout_prob=cfg.dropout,
        pad_token_id=0,
    )


def discriminator_config(cfg: ModelConfig) -> ElectraConfig:
    return _electra_config(cfg, cfg.hidden_size, cfg.num_layers)


def generator_config(cfg: ModelConfig) -> ElectraConfig:
    hidden = int(round(cfg.hidden_size * cfg.generator_hidden_fraction))
    layers = max(1, int(round(cfg.num_layers * cfg.generator_layers_fraction)))
    return _electra_config(cfg, hidden, layers)


def build_models(cfg: ModelConfig) -> tuple[ElectraForMaskedLM, ElectraForPreTraining]:
    """A generator and a discriminator whose embeddings (token, position, type) are one module."""
    disc = ElectraForPreTraining(discriminator_config(cfg))
    gen = ElectraForMaskedLM(generator_config(cfg))
    tie_embeddings(gen, disc)
    return gen, disc


def tie_embeddings(gen: ElectraForMaskedLM, disc: ElectraForPreTraining) -> None:
    gen.electra.embeddings = disc.electra.embeddings
    gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight


def shares_body(disc: ElectraForPreTraining, gen: ElectraForMaskedLM) -> bool:
    """True when the generator's body is the discriminator's: the same module, or equal shapes and weights
    (a pair saved from such a run and loaded back as two models)."""
    if gen.electra is disc.electra:
        return True
    a, b = disc.electra.state_dict(), gen.electra.state_dict()
    return a.keys() == b.keys() and all(a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in a)


def generator_head(gen: ElectraForMaskedLM, hidden: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits from the generator's last hidden states (any leading shape): the one place the
    generator's prediction head (dense, GELU, LayerNorm, tied output embedding) is applied."""
    return gen.generator_lm_head(gen.generator_predictions(hidden))


def lac_embeddings(vocab: list[str], dim: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Baidu LAC-small's 128-d character embeddings shipped inside jieba, aligned to ``vocab``.

    Returns (rows, vocab_ids) or None when jieba has no LAC model or the width differs.
    """
    try:
        import jieba
    except ImportError:  # a machine without jieba (a GPU machine's image): no warm start
        return None
    root = Path(jieba.__file__).parent / "lac_small"
    dic, emb_file = root / "word.dic", root / "model_baseline" / "word_emb"
    if dim != 128 or not dic.exists() or not emb_file.exists():
        return None
    words = [line.rstrip("\n").split("\t")[-1] for line in dic.open(encoding="utf-8")]
    raw = emb_file.read_bytes()
    n_rows = len(words) + 1  # one extra row for out-of-vocabulary words
    table = np.frombuffer(raw[len(raw) - n_rows * dim * 4 :], dtype="<f4").reshape(n_rows, dim)
    index = {w: i for i, w in enumerate(words)}
    pairs = [(index[t], vid) for vid, t in enumerate(vocab) if t in index]
    if not pairs:
        return None
    rows = table[[p[0] for p in pairs]]
    return rows, np.asarray([p[1] for p in pairs])


@torch.no_grad()
def warm_start_embeddings(disc: ElectraForPreTraining, vocab: list[str]) -> int:
    """Copy LAC character embeddings into the shared table, rescaled to the init std. Returns rows set."""
    emb = disc.electra.embeddings.word_embeddings.weight
    found = lac_embeddings(vocab, emb.shape[1])
    if found is None:
        return 0
    rows, ids = found
    rows = rows - rows.mean(0, keepdims=True)
    rows = rows / (rows.std() + 1e-8) * float(emb.std())
    emb[torch.as_tensor(ids)] = torch.as_tensor(rows, dtype=emb.dtype)
    return len(ids)


def count_params(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())
