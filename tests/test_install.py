"""A plain (non-editable) install has every package and finds the shipped model: ``pip install .`` into a fresh
venv, then ``python -m corrector 我门`` and ``batch`` from an empty directory.

To stay fast and offline the venv sees this environment's packages through a ``.pth`` line
(numpy, onnxruntime, ... and setuptools for the build) and pip installs the project alone
(``--no-deps --no-build-isolation``) from a copy of the sources, so no stale ``build/`` is reused.
tests/test_wheel.py installs the built wheel with its dependencies instead, and runs the service too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from checkout import copy_sources

REPO = Path(__file__).resolve().parents[1]



def test_every_installed_package_lives_under_corrector_and_training_stays_out():
    """Everything the wheel installs is under the project's name (corrector, corrector.service from service/, the
    default bundle as corrector.electra_models); every package directory of corrector/ and service/ is listed;
    training/ is not installed."""
    tomllib = pytest.importorskip("tomllib")
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    installed_as = {"corrector": "corrector", "service": "corrector.service"}
    on_disk = {".".join([installed_as[init.parent.relative_to(REPO).parts[0]], *init.parent.relative_to(REPO).parts[1:]])
               for top in installed_as for init in (REPO / top).rglob("__init__.py")}
    assert {"corrector.batch", "corrector.service"} <= on_disk
    on_disk.add("corrector.service.static")  # the demo page: data only, declared (no build warnings)
    assert on_disk <= listed, f"not in pyproject.toml's packages: {sorted(on_disk - listed)}"
    bundle = REPO / "data" / "electra_models" / "default"  # its folders are declared (data only): no build warnings
    folders = {f"corrector.electra_models.default.{d.name}" for d in bundle.iterdir() if d.is_dir()}
    assert folders | {"corrector.electra_models.default"} <= listed, sorted(folders - listed)
    assert {name.split(".")[0] for name in listed} == {"corrector"}
    assert setuptools["package-dir"] == {"corrector.service": "service", "corrector.electra_models": "data/electra_models"}


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    copy_sources(src)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv_python(venv)
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "outer_env.pth").write_text(sysconfig.get_path("purelib") + "\n")  # dependencies and pip
    done = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", str(src)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.rmtree(src)  # nothing may point back at the sources
    return py


@pytest.mark.slow
def test_plain_install_finds_the_shipped_model(installed, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no CSC_MODEL_DIR, no PYTHONPATH
    where = subprocess.run([str(installed), "-c", "import corrector, corrector.model_path as m; "
                            "print(corrector.__file__); print(m.default_model_path())"],
                           cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
    assert where.returncode == 0, where.stderr
    module, model = where.stdout.splitlines()
    prefix = str(installed.parent.parent)
    assert module.startswith(prefix) and model.startswith(prefix), where.stdout  # the installed copy, not REPO
    assert model.endswith("corrector/electra_models/default")
    done = subprocess.run([str(installed), "-m", "corrector", "我门一起去吃饭吧。"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "我们一起去吃饭吧。\n"


@pytest.mark.slow
def test_plain_install_runs_batch(installed, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    (tmp_path / "x.txt").write_text("我门一起去吃饭吧。\n", encoding="utf-8")
    done = subprocess.run([str(installed), "-m", "corrector", "batch", "--input", "x.txt", "--output", "out/"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in (tmp_path / "out" / "part-00000.jsonl").read_text().splitlines()]
    assert row["target"] == "我们一起去吃饭吧。"


@pytest.mark.slow
def test_the_cpu_runtime_everywhere_and_the_cuda_one_by_the_gpu_extra(installed, tmp_path):
    """A plain install pulls ONNX Runtime's CPU build on every platform; the gpu extra names the CUDA 12 builds
    (onnxruntime-gpu 1.20-1.26; 1.27 and later need CUDA 13)."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    meta = subprocess.run([str(installed), "-c", "from importlib.metadata import requires; "
                           "print('\\n'.join(requires('electra-csc')))"], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)  # not the checkout, whose *.egg-info would answer instead
    reqs = [Requirement(line) for line in meta.stdout.splitlines()]
    runtimes = [r for r in reqs if r.name in ("onnxruntime", "onnxruntime-gpu")]
    for plat, machine in [("linux", "x86_64"), ("win32", "AMD64"), ("linux", "aarch64"), ("darwin", "arm64")]:
        for extra, want in [("", ["onnxruntime"]), ("gpu", ["onnxruntime", "onnxruntime-gpu"])]:
            env = {"sys_platform": plat, "platform_machine": machine, "extra": extra}
            assert [r.name for r in runtimes if r.marker is None or r.marker.evaluate(env)] == want, (plat, extra)
    (gpu,) = [r for r in runtimes if r.name == "onnxruntime-gpu"]
    assert [v for v in ("1.19.2", "1.20.0", "1.26.9", "1.27.0") if gpu.specifier.contains(Version(v))] == \
        ["1.20.0", "1.26.9"]


def test_an_extra_is_named_by_what_installs_it():
    """No index has electra-csc: outside a checkout the hint lists the extra's own requirements (from the installed
    metadata) and the wheel's name with the extra; in a checkout, the editable install."""
    from corrector.model_path import install_hint

    hint = install_hint("service", checkout=False)
    assert "electra-csc[" not in hint and "pip install 'fastapi>=" in hint and ".whl[service]" in hint
    assert "'tomli>=2; python_version < \"3.11\"'" in install_hint("train", checkout=False)
    assert install_hint("distributed", checkout=True) == "pip install -e '.[distributed]'"
