"""The linter's configuration: ``[tool.electra-csc]`` in ``pyproject.toml`` or the top level of ``.electra-csc.toml``,
found in the first of the checked paths' folders or above it (``--config FILE`` names one).

    [tool.electra-csc]
    model = "path/to/bundle"            # default: the shipped bundle
    threshold = 0.5                     # report edits at or above this confidence (default: the bundle's threshold)
    fix = 0.9                           # --fix writes edits at or above this one
    include = ["docs/**", "*.md"]       # only these files (gitignore-style patterns; default: every kind read)
    exclude = ["vendor/**"]             # never these (added to .gitignore and .electra-csc-ignore)
    parts = ["comments", "strings"]     # what is read in source code
    protect = ["栈帧"]                   # words kept as written
    protect-files = ["words.txt"]       # word lists, one a line (relative to the configuration's folder; the
                                        # project's .electra-csc-words.txt is always read)
    confusions = ["的→地"]               # extra candidate pairs
    settings = { max_edits = 3 }        # any decoding setting (python -m corrector settings)
    terms = 3                           # a word the checked files write this often is kept as written (0: off)
    bigrams = 8                         # two characters they write side by side this often, too (0: off)

    [[tool.electra-csc.overrides]]      # for the files these patterns match, later tables win
    files = ["translations/**"]
    threshold = 0.8
    protect = ["拷贝"]
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from corrector.config import SETTINGS, check, parse_confusions
from corrector.evidence.terms import BIGRAM_MIN_COUNT, MIN_COUNT, OWN

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILE_NAMES = (".electra-csc.toml", "pyproject.toml")
WORDS_FILE = ".electra-csc-words.txt"  # the project's own words, kept as written (the editor's "ignore" writes here)
FIX_CONFIDENCE = 0.9  # where about nine edits in ten are right: the confidences are calibrated probabilities
PUBLISHED = (("protect_traditional_words", True), ("swap_threshold", 0.6))  # decoding settings for published text,
# unless configured (the swap threshold chosen on the judged findings of six documentation trees:
# docs/experiments/2026-12-published-text.md)
PER_FILE = {"threshold", "report", "fix", "parts", "protect", "protect-files", "confusions", "settings"}
RENAMED = {"report": "threshold"}  # an old key -> its name now: still read, for one release
KEYS = PER_FILE | {"model", "include", "exclude", "overrides", "terms", "bigrams"}


class ConfigError(Exception):
    """A configuration that cannot be used, said in one line."""


@dataclass(frozen=True)
class FileSettings:
    """What applies to one file."""

    threshold: float | None = None  # report edits at or above this confidence (None: the bundle's threshold)
    fix: float = FIX_CONFIDENCE
    parts: tuple[str, ...] = ("comments", "strings")
    protect: tuple[str, ...] = ()
    confusions: tuple[tuple[str, str], ...] = ()
    settings: tuple[tuple[str, Any], ...] = PUBLISHED  # decoding settings, sorted by name

    def decoding(self, report: float | None = None) -> dict[str, Any]:
        """The corrector's settings for this file's texts (``report``: the command line's threshold, which wins over
        the file's)."""
        out = dict(self.settings)
        if self.protect:
            out["protect"] = self.protect
        if self.confusions:
            out["confusions"] = self.confusions
        threshold = report if report is not None else self.threshold
        if threshold is not None:
            out["threshold"] = threshold
        return out


@dataclass(frozen=True)
class LintConfig:
    root: Path  # the folder paths in the configuration are relative to (the configuration's, or the current one)
    source: Path | None = None  # the file it was read from
    model: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    base: FileSettings = field(default_factory=FileSettings)
    overrides: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = ()  # (patterns, their keys)
    terms: int = MIN_COUNT  # a word written this often in the checked files is one of their terms (0: none)
    bigrams: int = BIGRAM_MIN_COUNT  # two characters written side by side this often are kept too (0: none)
    _applied: dict[tuple[int, ...], FileSettings] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def least(self) -> dict[str, int]:
        """How often a word or a pair is written to be one of the checked files' own (``terms``, ``bigrams``)."""
        return {name: getattr(self, name) for name in OWN}

    @property
    def project(self) -> bool:
        """Whether ``root`` is a project's (a configuration's folder or a repository's top), where its cache lives."""
        return self.source is not None or (self.root / ".git").exists()

    def for_file(self, relative: str) -> FileSettings:
        """The settings of the file at ``relative`` (a path relative to ``root``, with /): worked out once for each
        set of overrides that match (their word files are read then), not once a file."""
        matched = tuple(i for i, (patterns, _) in enumerate(self.overrides) if _spec(patterns).match_file(relative))
        if matched not in self._applied:
            out = self.base
            for i in matched:
                out = _apply(out, self.overrides[i][1], self.root, f"{self.source}: overrides")
            self._applied[matched] = out
        return self._applied[matched]


@functools.lru_cache(maxsize=256)
def _spec(patterns: tuple[str, ...]) -> Any:
    """gitignore-style ``patterns`` compiled (once)."""
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(patterns)


def find_config(start: Path, explicit: Path | None = None, default_root: Path | None = None) -> LintConfig:
    """The configuration for files under ``start`` (``explicit``: that file); none found, the defaults, rooted at
    ``default_root``, else the top of the git repository ``start`` is in, else the current folder."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"--config {explicit}: no such file")
        table = _table(explicit)
        if table is None:
            raise ConfigError(f"{explicit}: no [tool.electra-csc] table")
        return _config(explicit, table)
    folder = start.resolve()
    folder = folder if folder.is_dir() else folder.parent
    for here in (folder, *folder.parents):
        for name in FILE_NAMES:
            path = here / name
            if path.is_file() and (table := _table(path)) is not None:
                return _config(path, table)
        if (here / ".git").exists():
            return _with_project_words(LintConfig(root=default_root.resolve() if default_root else here))
    return _with_project_words(LintConfig(root=(default_root or Path.cwd()).resolve()))


def _with_project_words(config: LintConfig) -> LintConfig:
    """``config`` with the words of the project's word list (``WORDS_FILE`` beside the configuration) protected."""
    words = config.root / WORDS_FILE
    if not words.is_file():
        return config
    try:
        listed = [w.strip() for w in words.read_text(encoding="utf-8").splitlines() if w.strip()]
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{words}: {e}") from None
    return replace(config, base=replace(config.base, protect=tuple(dict.fromkeys((*config.base.protect, *listed)))))


def _table(path: Path) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from None
    if path.name == "pyproject.toml":
        return data.get("tool", {}).get("electra-csc")
    return data


def _config(path: Path, table: dict[str, Any]) -> LintConfig:
    where = str(path)
    unknown = set(table) - KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)} (known: {sorted(KEYS)})")
    root = path.parent.resolve()
    overrides = []
    for i, o in enumerate(table.get("overrides", [])):
        if not isinstance(o, dict) or not _strings(o.get("files")):
            raise ConfigError(f"{where}: overrides[{i}] needs files = [patterns]")
        extra = set(o) - PER_FILE - {"files"}
        if extra:
            raise ConfigError(f"{where}: overrides[{i}]: unknown keys {sorted(extra)} (known: {sorted(PER_FILE)})")
        _apply(FileSettings(), o, root, f"{where}: overrides[{i}]")  # checked now, applied per file
        overrides.append((tuple(o["files"]), {k: v for k, v in o.items() if k != "files"}))
    for key in ("include", "exclude"):
        if key in table and not _strings(table[key]):
            raise ConfigError(f"{where}: {key} must be a list of patterns")
    model = table.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"{where}: model must be a path")
    counts = {key: table.get(key, default) for key, (_, default) in OWN.items()}
    for key, n in counts.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigError(f"{where}: {key} must be a count of 0 or more (0: off), got {n!r}")
    return _with_project_words(LintConfig(root, path, str(root / model) if model else None,
                                          tuple(table.get("include", ())), tuple(table.get("exclude", ())),
                                          _apply(FileSettings(), table, root, where), tuple(overrides), **counts))


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _apply(settings: FileSettings, table: dict[str, Any], root: Path, where: str) -> FileSettings:
    """``settings`` with the per-file keys of ``table`` (each checked, naming ``where`` and the key)."""
    changes: dict[str, Any] = {}
    for old, new in RENAMED.items():
        if old in table and new in table:
            raise ConfigError(f"{where}: {old} is the old name of {new}: give {new} alone")
    for key in ("threshold", "report", "fix"):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ConfigError(f"{where}: {key} must be a confidence between 0 and 1, got {value!r}")
            changes[RENAMED.get(key, key)] = float(value)
    if "parts" in table:
        if not _strings(table["parts"]) or set(table["parts"]) - {"comments", "strings"}:
            raise ConfigError(f"{where}: parts must list 'comments' and/or 'strings'")
        changes["parts"] = tuple(table["parts"])
    words = list(settings.protect)
    if "protect" in table:
        if not _strings(table["protect"]):
            raise ConfigError(f"{where}: protect must be a list of words")
        words += table["protect"]
    for name in table.get("protect-files", []):
        try:
            words += [w.strip() for w in (root / name).read_text(encoding="utf-8").splitlines() if w.strip()]
        except OSError as e:
            raise ConfigError(f"{where}: protect-files: {root / name}: {e.strerror or e}") from None
    changes["protect"] = tuple(dict.fromkeys(words))
    if "confusions" in table:
        try:
            pairs = parse_confusions("\n".join(table["confusions"])) if _strings(table["confusions"]) else None
        except ValueError as e:
            raise ConfigError(f"{where}: confusions: {e}") from None
        if pairs is None:
            raise ConfigError(f"{where}: confusions must be a list like ['的→地']")
        changes["confusions"] = tuple(dict.fromkeys((*settings.confusions, *pairs)))
    if "settings" in table:
        given = table["settings"]
        if not isinstance(given, dict):
            raise ConfigError(f"{where}: settings must be a table")
        merged = dict(settings.settings)
        for name, value in given.items():
            if name not in SETTINGS or name in ("protect", "confusions", "threshold"):
                raise ConfigError(f"{where}: settings.{name}: not a decoding setting here "
                                  "(python -m corrector settings lists them; protect, confusions and threshold are keys)")
            try:
                merged[name] = check(name, value)
            except (TypeError, ValueError) as e:
                raise ConfigError(f"{where}: settings.{name}: {e}") from None
        changes["settings"] = tuple(sorted(merged.items()))
    return replace(settings, **changes)


__all__ = ["ConfigError", "FileSettings", "LintConfig", "find_config"]
