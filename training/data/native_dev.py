"""The native writers' development domains: every choice is made leaving one out, and none is ever trained on.

Four LEMON domains (``csc/lemon_dev/``: encyclopedia, medical care, contracts, games) and CSCD-NS's development
split (``csc/cscd_ns_dev.tsv``: Weibo posts of official media typed with a pinyin IME). CSCD-NS's error-free
sentences were picked as suspicious by a detector before they were annotated, so its false-positive rate runs
higher than elsewhere and is capped apart.
"""

from __future__ import annotations

from pathlib import Path

from .csc_data import read_pairs

FILES = {
    "enc": "csc/lemon_dev/enc.tsv",
    "mec": "csc/lemon_dev/mec.tsv",
    "cot": "csc/lemon_dev/cot.tsv",
    "gam": "csc/lemon_dev/gam.tsv",
    "cscd_ns": "csc/cscd_ns_dev.tsv",
}
DOMAINS = tuple(FILES)
LEMON_FPR_CAP = 0.03  # the share of a LEMON domain's correct sentences a choice may change
CSCD_NS_FPR_CAP = 0.06


def fpr_cap(domain: str, lemon_cap: float = LEMON_FPR_CAP, cscd_ns_cap: float = CSCD_NS_FPR_CAP) -> float:
    return cscd_ns_cap if domain == "cscd_ns" else lemon_cap


def domain_pairs(data: Path, domains: tuple[str, ...] = DOMAINS) -> dict[str, list[tuple[str, str]]]:
    """Each domain's (source, target) pairs from the data folder ``data``."""
    return {d: read_pairs(data / FILES[d]) for d in domains}
