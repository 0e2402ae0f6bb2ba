"""File descriptors: the process's soft limit raised to its hard one at start-up, and the connection cap kept below
what it allows, so that accepted connections never starve the rest (a limit of 1,024 is the default of systemd
and of many container runtimes)."""

from __future__ import annotations

import contextlib

FD_RESERVE = 64  # descriptors kept beside the accepted connections (model files, logs, refused ones' lingers)


def open_files_limit() -> int | None:
    """The soft ``RLIMIT_NOFILE`` (None: unlimited, or no such limit on this platform)."""
    try:
        import resource
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def raise_open_files_limit() -> tuple[int | None, int | None]:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit (capped at 1,048,576); (before, after)."""
    try:
        import resource
    except ImportError:
        return None, None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    before = None if soft == resource.RLIM_INFINITY else int(soft)
    target = 1 << 20 if hard == resource.RLIM_INFINITY else min(hard, 1 << 20)
    if before is not None and before < target:
        with contextlib.suppress(ValueError, OSError):  # not allowed here: the limit stays
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return before, open_files_limit()


def descriptor_cap(max_connections: int) -> int:
    """``max_connections``, lowered to what the soft ``RLIMIT_NOFILE`` leaves beside ``FD_RESERVE``."""
    limit = open_files_limit()
    return max_connections if limit is None else max(1, min(max_connections, limit - FD_RESERVE))
