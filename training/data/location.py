"""Where the data folder is, and what to say when a file of it is missing.

One setting: ``$CSC_DATA``, else ``../shared/data`` beside the checkout (the layout ``training/data/sources.toml``
describes). Commands take ``--data`` defaulting to :func:`default_data`; :func:`require` turns a missing file into
one line that names it and the command that assembles it from its public sources.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

ENV_DATA = "CSC_DATA"
FALLBACK = Path("../shared/data")
ASSEMBLE = "python -m training.data.assemble --out {data}"


def default_data() -> Path:
    """``$CSC_DATA`` when set, else ../shared/data."""
    return Path(os.environ[ENV_DATA]) if os.environ.get(ENV_DATA) else FALLBACK


class MissingData(SystemExit):
    """A file of the data folder is not there: exits with one line saying which and how to get it."""


def require(paths: Iterable[Path | str], data: Path | None = None) -> None:
    """Exit with one line when any of ``paths`` is missing: which ones, and how to assemble the folder."""
    missing = [Path(p) for p in paths if not Path(p).exists()]
    if missing:
        folder = data if data is not None else _folder_of(missing[0])
        names = ", ".join(str(p) for p in missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise MissingData(f"error: missing {names}: assemble the data folder from its public sources with "
                          f"'{ASSEMBLE.format(data=folder)}' (docs/data.md), or set ${ENV_DATA} to where it is")


def _folder_of(path: Path) -> Path:
    """The data folder a path lies in: the parent of its csc/ or corpus/ folder, else its own folder."""
    for parent in path.parents:
        if parent.name in ("csc", "corpus"):
            return parent.parent
    return path.parent
