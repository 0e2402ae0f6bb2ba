# syntax=docker/dockerfile:1
# The HTTP service (python -m corrector serve) with the default model bundle inside.
#
#   GPU image:  docker build -t electra-csc .
#               docker run --gpus all -p 8000:8000 electra-csc
#   CPU image:  docker build --build-arg BASE_IMAGE=python:3.11-slim --build-arg ONNXRUNTIME=onnxruntime \
#                 -t electra-csc:cpu .
#
# Without a Docker daemon, buildah or podman build and run the same image: docs/containers.md (--format docker
# keeps the HEALTHCHECK, which the OCI format has no field for).
#
# The GPU image also runs without a GPU: the corrector falls back to ONNX Runtime's CPU provider and says why
# at start-up. The CPU image never downloads the GPU runtime.
# Needs data/electra_models/default (a bundle written by training/bundle/export.py) in the build context: its
# inference files are installed with the package (as corrector.electra_models), where the service finds them.

# CUDA 12 + cuDNN 9: what onnxruntime-gpu 1.20-1.26 wheels are built against (1.27+ need CUDA 13).
ARG BASE_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04

FROM ${BASE_IMAGE} AS base
ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH
# The CUDA images have no Python; python:*-slim images do. Either way the service lives in /opt/venv.
# hadolint ignore=DL3008
RUN if ! command -v python3 >/dev/null; then \
        apt-get update \
        && apt-get install -y --no-install-recommends python3 python3-venv \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3 -m venv /opt/venv

FROM base AS build
# onnxruntime-gpu (default) or onnxruntime (CPU-only, much smaller); the version range matches CUDA 12
ARG ONNXRUNTIME=onnxruntime-gpu
ARG ONNXRUNTIME_VERSION=">=1.20,<1.27"
# a CA bundle for pip (a path inside the build) where the network's proxy re-signs TLS; empty: pip's own
ARG PIP_CERT=""
WORKDIR /src
COPY pyproject.toml README.md ./
COPY corrector ./corrector
COPY service ./service
COPY data/electra_models ./data/electra_models
# The service extra only: no torch, no training code. The package depends on the CPU runtime; the GPU image
# replaces it with the CUDA one (both provide the module onnxruntime, so only one may be installed). The check
# runs isolated (-I), so that it imports the installed package, not ./corrector.
# hadolint ignore=DL3013
RUN pip install "onnxruntime${ONNXRUNTIME_VERSION}" ".[service]" \
    && if [ "${ONNXRUNTIME}" = "onnxruntime-gpu" ]; then \
        pip uninstall -y onnxruntime \
        && pip install "onnxruntime-gpu${ONNXRUNTIME_VERSION}"; \
    fi \
    && python -I -c "import onnxruntime, corrector.service.app, corrector.batch.command; print('onnxruntime', onnxruntime.__version__, onnxruntime.get_available_providers())"

FROM base AS runtime
COPY --from=build /opt/venv /opt/venv
RUN groupadd --system --gid 10001 csc \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin csc
WORKDIR /app
# The default bundle is inside /opt/venv (root-owned, world-readable: the service cannot change it);
# another one can be mounted and named with -e CSC_MODEL_DIR=/path/in/container.
ENV CSC_DEVICE=auto
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4).status != 200)"]
# SIGTERM (docker stop) shuts down gracefully: requests in flight finish, then the process exits
STOPSIGNAL SIGTERM
CMD ["python", "-m", "corrector", "serve", "--host", "0.0.0.0", "--port", "8000"]
