"""The bundle's ``manifest.json``: one typed record, written by ``training.bundle.export`` and read by ``corrector.bundle``."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

FORMAT_VERSION = 1
MANIFEST = "manifest.json"  # the file, at a bundle's root
CpuOnnx = Literal["fp32", "int8"]


@dataclass
class Manifest:
    name: str
    vocab_sha256: str
    vocab_size: int
    max_seq_len: int
    version: str = "0"
    format_version: int = FORMAT_VERSION
    created: str = ""
    onnx: dict[str, Any] = field(default_factory=dict)  # opset, ONNX-vs-torch and int8-vs-fp32 checks
    cpu_onnx: CpuOnnx = "fp32"  # the graphs the Corrector runs on CPU by default
    provenance: dict[str, Any] = field(default_factory=dict)  # how the networks were trained (no machine paths)
    metrics: dict[str, Any] = field(default_factory=dict)  # evaluation reports
    corrector_defaults: dict[str, Any] = field(default_factory=dict)  # decoding settings (CorrectorConfig fields)
    lm: dict[str, Any] = field(default_factory=dict)  # the character LM: order, smoothing, pruning, size, perplexity
    candidates: dict[str, Any] = field(default_factory=dict)  # the static candidate table's build settings
    ranker: dict[str, Any] = field(default_factory=dict)  # how ranker.json was fitted and its threshold chosen
    files: list[str] = field(default_factory=list)  # every file of the bundle, relative

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Manifest:
        """ValueError names the first missing or mistyped field; unknown fields are ignored."""
        if not isinstance(d, dict):
            raise ValueError("the manifest must hold a JSON object")
        known = {f.name for f in fields(cls)}
        for key in ("name", "vocab_sha256", "vocab_size", "max_seq_len"):
            if key not in d:
                raise ValueError(f"no {key!r}")
        m = cls(**{k: v for k, v in d.items() if k in known})
        if m.cpu_onnx not in ("fp32", "int8"):
            raise ValueError(f"cpu_onnx {m.cpu_onnx!r} (fp32 or int8)")
        for key in ("vocab_size", "max_seq_len", "format_version"):
            if not isinstance(getattr(m, key), int):
                raise ValueError(f"{key} must be an integer")
        return m

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n"

    def write(self, root: Path) -> None:
        """List every file of the bundle at ``root`` in ``files`` and write ``root/manifest.json``."""
        self.files = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                            if p.is_file() and p.name != MANIFEST)
        (root / MANIFEST).write_text(self.to_json(), encoding="utf-8")


def finish_bundle(tmp: Path, out: Path, manifest: Manifest) -> None:
    """Write the manifest of the bundle built at ``tmp`` and move it into place at ``out`` (replacing what is there),
    so that a failed build never leaves a half-written bundle at ``out`` (the export, ``corrector adapt``)."""
    manifest.write(tmp)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
