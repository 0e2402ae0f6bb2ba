"""The container image, built and run: the CPU image from the Dockerfile, built with buildah (no Docker daemon) on a
Debian base made with debootstrap; in it, as the image's non-root user, the CLI, ``batch`` and the service, which
answers ``/ready`` and ``POST /correct`` over the host's loopback (chroot isolation shares the network).

Slow: the base takes about a minute (it is kept as localhost/electra-csc-base:bookworm for the next run), the build
a few more (pip inside it). Needs root, buildah and debootstrap: it skips without them, except under CI (CI=true),
where .ci/system-deps installs them and their absence fails the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import system_dependency
from live_server import DIRECT, free_port, http, wait_ready

REPO = Path(__file__).resolve().parents[1]
BASE = "localhost/electra-csc-base:bookworm"
IMAGE = "localhost/electra-csc:cpu-test"
SUITE = "bookworm"  # Debian 12: its python3 is 3.11
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")  # the host's CA bundle, for a pip whose proxy re-signs TLS
TYPO, FIXED = "我门一起去吃饭吧。", "我们一起去吃饭吧。"

pytestmark = pytest.mark.slow


def buildah(*args: str, timeout: int = 600, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["buildah", *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"buildah {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def debian_mirror() -> str:
    """The Debian mirror apt uses here (deb822 or one-line sources), else deb.debian.org."""
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            text = path.read_text()
            found = re.search(r"^URIs:\s*(\S+/debian)/?\s*$", text, re.M) or \
                re.search(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+/debian)/?\s+\S+", text, re.M)
            if found:
                return found.group(1)
    return "http://deb.debian.org/debian"


def make_base(tmp: Path) -> None:
    """A minimal Debian made with debootstrap, imported as BASE (buildah from scratch, add, commit)."""
    rootfs = tmp / "rootfs"
    done = subprocess.run(["debootstrap", "--variant=minbase", SUITE, str(rootfs), debian_mirror()],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with tarfile.open(tmp / "rootfs.tar", "w") as tar:
        tar.add(rootfs, arcname=".")
    ctr = buildah("from", "scratch").stdout.strip()
    try:
        buildah("add", ctr, str(tmp / "rootfs.tar"), "/")
        buildah("commit", "-q", ctr, BASE)
    finally:
        buildah("rm", ctr, check=False)
    shutil.rmtree(rootfs)


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Iterator[str]:
    system_dependency(shutil.which("buildah") is not None and shutil.which("debootstrap", path="/usr/sbin:/sbin:"
                                                                           + os.environ.get("PATH", "")) is not None,
                      "buildah and debootstrap are not installed (apt-get install buildah debootstrap)")
    system_dependency(os.geteuid() == 0, "building the base image needs root (debootstrap, buildah)")
    if not buildah("images", "-q", BASE, check=False).stdout.strip():
        make_base(tmp_path_factory.mktemp("base"))
    ca = ["-v", f"{CA_BUNDLE}:/run/host-ca.crt:ro", "--build-arg", "PIP_CERT=/run/host-ca.crt"] \
        if CA_BUNDLE.is_file() else []
    # as docs/containers.md builds it: --format docker keeps the HEALTHCHECK
    built = buildah("bud", "--format", "docker", "--isolation", "chroot", "-t", IMAGE, "--build-arg",
                    f"BASE_IMAGE={BASE}", "--build-arg", "ONNXRUNTIME=onnxruntime", *ca, str(REPO), timeout=1800)
    assert "onnxruntime_gpu" not in built.stdout + built.stderr  # the CPU image never downloads the GPU runtime
    stages = re.findall(r"^--> ([0-9a-f]+)$", built.stdout, re.M)  # each stage's image; the last is IMAGE
    try:
        yield IMAGE
    finally:
        buildah("rmi", "-f", IMAGE, *stages[:-1], check=False)


@pytest.fixture
def container(image) -> Iterator[str]:
    ctr = buildah("from", image).stdout.strip()
    try:
        yield ctr
    finally:
        buildah("rm", ctr, check=False)


def test_the_image_keeps_its_health_check_and_holds_only_the_cpu_runtime(image, container):
    config = json.loads(buildah("inspect", "--type", "image", image).stdout)
    check = config["Docker"]["config"]["Healthcheck"]["Test"]
    assert check[0] == "CMD" and "/health" in " ".join(check)
    script = ("import importlib.metadata as m; print(sorted(x.metadata['Name'].lower() for x in m.distributions() "
              "if x.metadata['Name'].lower().startswith(('onnxruntime', 'nvidia', 'torch'))))")
    assert buildah("run", "--isolation", "chroot", container, "python", "-c", script).stdout.strip() == "['onnxruntime']"


def test_the_image_runs_the_cli_and_batch_as_its_non_root_user(container):
    assert buildah("run", "--isolation", "chroot", container, "id", "-u").stdout.strip() == "10001"
    done = buildah("run", "--isolation", "chroot", container, "python", "-m", "corrector", TYPO)
    assert done.stdout == FIXED + "\n"
    script = ("import pathlib, subprocess, sys; p = pathlib.Path('/tmp/in.txt'); p.write_text('" + TYPO + "\\n'); "
              "subprocess.run([sys.executable, '-m', 'corrector', 'batch', '-i', str(p), '-o', '/tmp/out'], "
              "check=True, capture_output=True); print(pathlib.Path('/tmp/out/part-00000.jsonl').read_text())")
    row = json.loads(buildah("run", "--isolation", "chroot", container, "python", "-c", script).stdout)
    assert row["target"] == FIXED


def test_the_service_in_the_image_answers_ready_and_correct(container, tmp_path):
    port = free_port()
    log = tmp_path / "service.log"
    with log.open("w") as out:
        proc = subprocess.Popen(["buildah", "run", "--isolation", "chroot", "--user", "10001:10001", container,
                                 "python", "-m", "corrector", "serve", "--host", "127.0.0.1", "--port", str(port)],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        ready = wait_ready(proc, base, log)
        assert ready["status"] == "ready" and ready["model"] == "default" and ready["precision"] == "int8"
        status, body = http("POST", f"{base}/correct", {"text": TYPO}, 60)
        assert status == 200, body
        (result,) = json.loads(body)["results"]
        assert result["target"] == FIXED and [e["target"] for e in result["edits"]] == ["们"]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)  # buildah and the service it runs
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with pytest.raises(OSError):  # stopped: nothing listens any more
        DIRECT.open(f"{base}/health", timeout=2)
