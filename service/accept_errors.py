"""Accept errors logged as one line per interval with their count, not one traceback each.

When the process runs out of file descriptors, asyncio reports every failed ``accept()`` to the loop's exception
handler, whose default writes a traceback each time: 300,000 lines in 25 s under a flood of idle sockets. The
lifespan installs :func:`throttled` on the server's loop; every other report goes to the default handler, except
asyncio's retry of accepting on a socket closed since by the shutdown, which is no error (``_stale_retry``).
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

from .descriptors import open_files_limit

log = logging.getLogger("service.connections")
EVERY_S = 10.0  # at most one line in this many seconds
ACCEPT = "socket.accept() out of system resource"  # asyncio's message (selector_events)


class AcceptErrors:
    """A loop exception handler: accept errors counted and logged at most once every ``EVERY_S``."""

    def __init__(self) -> None:
        self.count = 0
        self.logged_at = -math.inf

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if _stale_retry(context):
            log.debug("a retry of accept() on a listening socket closed since (shutdown): nothing to accept")
            return
        if context.get("message") != ACCEPT:
            loop.default_exception_handler(context)
            return
        self.count += 1
        now = loop.time()
        if now - self.logged_at >= EVERY_S:
            limit = open_files_limit()
            log.error("%d connection(s) could not be accepted in the last %g s: %s (this process may open %s file "
                      "descriptors)", self.count, EVERY_S, context.get("exception"),
                      "unlimited" if limit is None else f"{limit:,}")
            self.count, self.logged_at = 0, now


def _stale_retry(context: dict[str, Any]) -> bool:
    """After a failed accept, asyncio stops listening and retries a second later (``_start_serving``); when the
    server shuts down meanwhile, the retry finds its socket closed and raises ValueError (file descriptor -1), a
    traceback per pending retry at every shutdown after a flood. Nothing is lost: the socket is closed on purpose."""
    callback = getattr(context.get("handle"), "_callback", None)
    return isinstance(context.get("exception"), ValueError) and getattr(callback, "__name__", "") == "_start_serving"


def throttled(loop: asyncio.AbstractEventLoop) -> None:
    """Install the handler on ``loop``."""
    loop.set_exception_handler(AcceptErrors())
