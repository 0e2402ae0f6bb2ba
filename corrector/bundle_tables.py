"""The tables of a bundle besides its networks and ranker, each read by its own loader, in one place
(``BundleTables.load``, which ``Corrector.load`` calls while the ONNX sessions build): the similarity tables, the
candidate table with the word forms the real pairs keep and the foreign names' characters, the character LM,
jieba's words, the domain's words kept as written and the particles' table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corrector.bundle import CANDIDATES_DIR, DOMAIN_WORDS, LM_DIR, SIMILARITY_DIR, Bundle
from corrector.evidence.candidates import CandidateTable
from corrector.evidence.char_lm import CharLM
from corrector.evidence.dictionary import WORDS, WordTable
from corrector.evidence.foreign_names import load_name_shares
from corrector.evidence.kept_forms import PairCounts
from corrector.evidence.particles import FILE as PARTICLES
from corrector.evidence.particles import ParticleTable
from corrector.evidence.similarity import SimilarityTables
from corrector.guards import read_word_file
from corrector.types import CorrectorError

if TYPE_CHECKING:
    from corrector.evidence.char_lm_kenlm import KenLMCharLM


@dataclass(frozen=True)
class BundleTables:
    similarity: SimilarityTables
    candidates: CandidateTable | None  # None: the bundle has no candidates/ folder (nor the next two)
    counts: PairCounts | None
    name_shares: dict[str, float] | None
    lm: CharLM | KenLMCharLM | None
    words: WordTable | None  # None: read from jieba at first use
    domain_words: tuple[str, ...]
    particles: ParticleTable | None  # None: the bundle has no dictionary/particles.json

    @classmethod
    def load(cls, bundle: Bundle, lm: str | Path | None = None) -> BundleTables:
        """The bundle's tables; ``lm`` replaces its character LM (as for ``Corrector.load``)."""
        cand_dir = bundle.file(CANDIDATES_DIR)
        candidates, counts, names = candidate_folder(cand_dir) if cand_dir.is_dir() else (None, None, None)
        lm_path = Path(lm) if lm is not None else bundle.file(LM_DIR)
        words, domain, particles = bundle.file(WORDS), bundle.file(DOMAIN_WORDS), bundle.file(PARTICLES)
        return cls(SimilarityTables.load(bundle.file(SIMILARITY_DIR)), candidates, counts, names,
                   load_lm(lm_path) if lm is not None or lm_path.is_dir() else None,
                   WordTable.load(words, bundle.manifest.vocab_sha256) if words.is_file() else None,
                   tuple(read_word_file(domain)) if domain.is_file() else (),
                   ParticleTable.load(particles) if particles.is_file() else None)


def load_lm(path: Path) -> Any:
    """A character LM directory (training.evidence.char_lm), or a KenLM .arpa/.klm file through the kenlm module."""
    if path.is_file() and path.suffix in (".arpa", ".klm", ".bin"):
        from corrector.evidence.char_lm_kenlm import KenLMCharLM

        return KenLMCharLM.load(path)
    if not path.is_dir():
        raise CorrectorError(f"no character LM at {path}: expected a directory from training.evidence.char_lm "
                             "or a KenLM .arpa/.klm file")
    return CharLM.load(path)


def candidate_folder(directory: Path) -> tuple[CandidateTable, PairCounts, dict[str, float]]:
    """A ``training.evidence.candidates`` folder: the candidate table, the word forms the real pairs keep and the
    foreign names' characters, each by its own loader."""
    return CandidateTable.load(directory), PairCounts.load(directory), load_name_shares(directory)
