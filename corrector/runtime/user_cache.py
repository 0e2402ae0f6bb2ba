"""A cache directory only this user can write: ``$XDG_CACHE_HOME/electra-csc/NAME`` (default ``~/.cache/...``).

A cache read back with ``marshal`` or ``pickle`` runs whatever it holds, so it must never sit where another user of
the machine could put a file (a fixed name under ``/tmp``). :func:`private_dir` makes the directory with mode 0700 and
hands it out only when this user owns it and nobody else may write to it; otherwise there is no cache (None).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

APP = "electra-csc"


def cache_root() -> Path | None:
    """``$XDG_CACHE_HOME/electra-csc``, else ``~/.cache/electra-csc``; None when there is no home directory."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no $HOME and no password entry
            return None
    return Path(base) / APP


def private_dir(name: str) -> Path | None:
    """The cache directory ``name`` under :func:`cache_root`, made if need be; None unless it is private."""
    root = cache_root()
    if root is None or not root.is_absolute():
        return None
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        (root / name).mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return root / name if all(_private(d) for d in (root, root / name)) else None


def _private(path: Path) -> bool:
    """A real directory (not a link) of this user that no one else may write to (made so when it is ours)."""
    try:
        st = path.lstat()
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if not hasattr(os, "getuid"):  # Windows: the user's profile directory is private already
        return True
    if st.st_uid != os.getuid():
        return False
    if st.st_mode & 0o077:
        try:
            path.chmod(0o700)
        except OSError:
            return False
    return True
