"""The model bundle: the one contract between ``training/`` (writes it) and ``corrector/`` (reads it).

    <bundle>/
      manifest.json                 name, format version, vocab sha256, max sequence length, files,
                                    provenance, metrics, tuned corrector defaults
      discriminator/                Hugging Face ElectraForPreTraining (config.json, model.safetensors, vocab.txt)
      generator/                    Hugging Face ElectraForMaskedLM (config.json, model.safetensors, vocab.txt)
      onnx/discriminator.onnx       input_ids, attention_mask -> logits (B, T)
      onnx/generator.onnx           input_ids, attention_mask, positions (B, P) -> logits (B, P, V)
      onnx/joint.onnx               instead of those two, when the generator is a head on the discriminator's
                                    body: input_ids, attention_mask, positions -> logits (B, P, V), rtd_logits (B, T)
                                    from one pass (the shared body stored once)
      onnx/body.onnx, onnx/head.onnx  instead of the joint graph, the same split in two (training.bundle.split):
                                    input_ids, attention_mask -> rtd_logits (B, T), hidden (B, T, H); and
                                    hidden, positions (B, P) -> logits (B, P, V), so that the vocabulary head
                                    runs only where the RTD score reaches the floor
      onnx/*.int8.onnx              optional int8 copies for CPU (manifest "cpu_onnx": "int8" makes them the
                                    CPU default); manifest onnx.int8_activations "static" marks calibrated
                                    graphs (training.bundle.quantize), anything else dynamic ones
      similarity/pinyin.tsv, similarity/shape.tsv
      candidates/candidates.npz     optional: static candidate lists (training.evidence.candidates)
      lm/                           optional: character n-gram LM (training.evidence.char_lm)
      ranker.json                   optional: the fitted ranker's named weights and threshold (training.fitting.fit)
      dictionary/words.npz          optional: jieba's two-, three- and four-character words as vocab-id keys with
                                    their counts (corrector.evidence.dictionary), read in milliseconds; without it the
                                    decoder reads jieba's own dictionary at first use (a second), with the same result
      dictionary/particles.json     optional: the words beside 的, 地 and 得 and which of the three stood there
                                    (corrector.evidence.particles: the ``particle`` feature)
      dictionary/domain_words.txt   optional: a domain's own words, one a line (``corrector adapt``), kept as written
                                    (protect_domain_words)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from corrector.manifest import FORMAT_VERSION, MANIFEST, Manifest
from corrector.types import CorrectorError

VOCAB = "discriminator/vocab.txt"
ONNX_DISCRIMINATOR = "onnx/discriminator.onnx"
ONNX_GENERATOR = "onnx/generator.onnx"
ONNX_JOINT = "onnx/joint.onnx"
ONNX_BODY = "onnx/body.onnx"
ONNX_HEAD = "onnx/head.onnx"
ONNX_GRAPHS = {"discriminator": ONNX_DISCRIMINATOR, "generator": ONNX_GENERATOR, "joint": ONNX_JOINT,
               "body": ONNX_BODY, "head": ONNX_HEAD}
ONNX_INT8 = {rel: rel.removesuffix(".onnx") + ".int8.onnx" for rel in ONNX_GRAPHS.values()}
Precision = Literal["auto", "fp32", "int8"]  # which CPU graphs; auto = what the manifest recommends
PRECISIONS: tuple[str, ...] = get_args(Precision)
Device = Literal["auto", "cpu", "cuda"]  # where the networks run; auto = CUDA when it really loads, else CPU
DEVICES: tuple[str, ...] = get_args(Device)
SIMILARITY_DIR = "similarity"
CANDIDATES_DIR = "candidates"
LM_DIR = "lm"
RANKER = "ranker.json"
WORDS = "dictionary/words.npz"  # corrector.evidence.dictionary
DOMAIN_WORDS = "dictionary/domain_words.txt"  # corrector.guards.DomainWords (written by corrector adapt)
REQUIRED_FILES = (  # what inference reads, whatever the graphs
    "discriminator/config.json",
    VOCAB,
    "generator/config.json",
    "generator/vocab.txt",
    f"{SIMILARITY_DIR}/pinyin.tsv",
    f"{SIMILARITY_DIR}/shape.tsv",
)
# The networks' torch weights: training reads them (to continue, re-export or quantise), inference never does, so a
# bundle without them (as the wheel installs it) still loads.
TRAINING_FILES = ("discriminator/model.safetensors", "generator/model.safetensors")


def graph_names(root: Path) -> tuple[str, ...]:
    """The networks' ONNX graphs a bundle directory holds, by name: one joint graph, its body and head apart, or
    the pair."""
    if (root / ONNX_JOINT).is_file():
        return ("joint",)
    return ("body", "head") if (root / ONNX_BODY).is_file() else ("discriminator", "generator")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Bundle:
    path: Path
    manifest: Manifest

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def version(self) -> str:
        return self.manifest.version

    @property
    def max_seq_len(self) -> int:
        return self.manifest.max_seq_len

    @property
    def vocab_path(self) -> Path:
        return self.path / VOCAB

    def file(self, rel: str) -> Path:
        return self.path / rel

    @property
    def graph_names(self) -> tuple[str, ...]:
        """("joint",) when the bundle holds one graph for both heads, ("body", "head") when it holds that graph
        in two, else ("discriminator", "generator")."""
        return graph_names(self.path)

    @property
    def has_int8(self) -> bool:
        return all((self.path / ONNX_INT8[ONNX_GRAPHS[n]]).is_file() for n in self.graph_names)

    @property
    def int8_static(self) -> bool:
        """True when the int8 graphs have fixed (calibrated) activation scales, so rows never mix."""
        return self.manifest.onnx.get("int8_activations") == "static"

    def onnx_files(self, precision: str) -> tuple[dict[str, Path], dict[str, Path]]:
        """The ONNX paths by graph name (:attr:`graph_names`) for (CUDA, CPU) given "auto", "fp32" or "int8".

        CUDA always gets the float graphs; CPU gets the int8 ones when asked for, or with "auto"
        when the manifest's ``cpu_onnx`` says they were measured to be as good and faster.
        """
        if precision not in PRECISIONS:
            raise CorrectorError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        rels = [ONNX_GRAPHS[n] for n in self.graph_names]
        if precision == "int8" and not self.has_int8:
            raise CorrectorError(f"model bundle {self.path} has no int8 ONNX files ({ONNX_INT8[rels[0]]})")
        fp = {n: self.file(rel) for n, rel in zip(self.graph_names, rels)}
        use_int8 = precision == "int8" or (precision == "auto" and self.manifest.cpu_onnx == "int8")
        cpu = {n: self.file(ONNX_INT8[rel]) for n, rel in zip(self.graph_names, rels)} if use_int8 else fp
        return fp, cpu

    @property
    def corrector_defaults(self) -> dict:
        return dict(self.manifest.corrector_defaults)

    @classmethod
    def load(cls, path: str | Path) -> Bundle:
        """Check the layout and the manifest; raise CorrectorError naming the first problem found."""
        root = Path(path)
        if not root.is_dir():
            raise CorrectorError(f"no model bundle at {root}: directory not found")
        mf = root / MANIFEST
        if not mf.is_file():
            raise CorrectorError(f"not a model bundle: {mf} is missing")
        try:
            raw = json.loads(mf.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CorrectorError(f"bad model bundle: {mf} is not valid JSON ({e})") from None
        version = raw.get("format_version") if isinstance(raw, dict) else None
        if isinstance(raw, dict) and version != FORMAT_VERSION:
            raise CorrectorError(
                f"incompatible model bundle {root}: format version {version!r}, this library reads {FORMAT_VERSION}"
            )
        try:
            manifest = Manifest.from_dict(raw)
        except (TypeError, ValueError) as e:
            raise CorrectorError(f"bad model bundle: {mf}: {e}") from None
        graphs = [ONNX_GRAPHS[n] for n in graph_names(root)]
        recommended = [ONNX_INT8[rel] for rel in graphs] if manifest.cpu_onnx == "int8" else []
        for rel in (*REQUIRED_FILES, *graphs, *manifest.files, *recommended):
            if not (root / rel).is_file() and rel not in TRAINING_FILES:
                raise CorrectorError(f"incomplete model bundle {root}: missing {rel}")
        digest = sha256_file(root / VOCAB)
        if digest != manifest.vocab_sha256:
            raise CorrectorError(
                f"model bundle {root}: vocab hash mismatch ({VOCAB} has sha256 {digest[:12]}…, "
                f"manifest says {manifest.vocab_sha256[:12]}…)"
            )
        if sha256_file(root / "generator/vocab.txt") != digest:
            raise CorrectorError(f"model bundle {root}: generator/vocab.txt differs from {VOCAB}")
        return cls(root, manifest)
