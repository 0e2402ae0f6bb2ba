"""``python -m corrector``: the command line (corrector/cli/main.py).

Once a one-shot command has written and flushed its output, the process ends at once (``os._exit``): freeing the
decoder's tables and OpenCC's dictionaries object by object would add a third of a second to every run. ``batch``
ends normally (its engines, Ray and worker processes, shut down in exit handlers), and so does a run under a
profiler or a tracer (cProfile, coverage), which writes its results at exit.
"""

import contextlib
import os
import sys

from corrector.cli.main import main

try:
    main()
except SystemExit as done:
    if sys.argv[1:2] == ["batch"] or sys.getprofile() is not None or sys.gettrace() is not None:
        raise
    code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    if done.code is not None and not isinstance(done.code, int):
        sys.stderr.write(f"{done.code}\n")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be written
            stream.flush()
    os._exit(code)
