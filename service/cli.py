"""``python -m service``: start the HTTP service under uvicorn.

    python -m service --host 127.0.0.1 --port 8000 --model data/electra_models/default
    CSC_MODEL_DIR=... CSC_MAX_BATCH_SIZE=64 python -m service          # every flag has a CSC_* variable

Flags win over environment variables, which win over the defaults in ``service/settings.py``.
Before anything heavy, the port is checked; then the model is loaded and its speed measured; any failure
is one line on stderr and exit code 2. SIGTERM or Ctrl-C shut down gracefully: no new connections,
requests in flight finish (up to --shutdown-timeout seconds), queued batches drain, then the process exits.
See docs/service.md for every setting.
"""

from __future__ import annotations

import argparse
import copy
import ipaddress
import json
import logging
import logging.config
import os
import socket
import sys
from typing import Any, NoReturn

from pydantic import ValidationError

from corrector.bundle import PRECISIONS

from .settings import ENV_PREFIX, ServiceSettings

# flag destination -> settings field, for the flags whose names differ
FIELD_OF = {"model": "model_dir", "no_batching": "batching", "request_timeout": "request_timeout_s",
            "shutdown_timeout": "shutdown_timeout_s", "header_timeout": "header_timeout_s",
            "body_timeout": "body_timeout_s", "keep_alive": "keep_alive_s"}
log = logging.getLogger("service")


PACKAGE = __package__ or "service"  # "corrector.service" where installed, "service" in a checkout


def build_parser(prog: str = "python -m service") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=prog,
        description="Serve Chinese spelling correction over HTTP (POST /correct, GET /, /health, /ready, "
                    f"/metrics, /docs). Every option can also be set as an environment variable {ENV_PREFIX}NAME.",
    )
    ap.add_argument("--version", action="version", version=_version())
    s = ap.add_argument_group("server")
    s.add_argument("--host", help="address to bind (default 127.0.0.1; 0.0.0.0 for all interfaces)")
    s.add_argument("--port", type=int, help="port (default 8000)")
    s.add_argument("--workers", type=int, help="processes, each with its own model and /metrics (default 1)")
    s.add_argument("--log-level", choices=["critical", "error", "warning", "info", "debug"])
    s.add_argument("--no-access-log", dest="access_log", action="store_const", const=False,
                   help="do not log every request")
    s.add_argument("--shutdown-timeout", type=float, metavar="S", help="grace period for requests in flight (default 8)")
    m = ap.add_argument_group("model")
    m.add_argument("--model", "-m", metavar="DIR",
                   help="model bundle directory (default: $CSC_MODEL_DIR or the shipped one)")
    m.add_argument("--device", choices=["auto", "cpu", "cuda"], help="auto = CUDA when usable, else CPU")
    m.add_argument("--threads", type=int, help="ONNX Runtime threads per session (0 = its default)")
    m.add_argument("--precision", choices=PRECISIONS,
                   help="CPU graphs: auto (the bundle's recommendation), fp32 or int8")
    m.add_argument("--corrector-settings", metavar="JSON",
                   help='decoding settings for every request, e.g. \'{"protect_dictionary_words": true}\'')
    m.add_argument("--protect-file", metavar="FILE",
                   help="words never edited inside, one a line, for every request (names, terms: a user dictionary)")
    b = ap.add_argument_group("micro-batching")
    b.add_argument("--no-batching", action="store_const", const=False,
                   help="one model call per request instead of gathering concurrent requests")
    b.add_argument("--max-batch-size", type=int, metavar="N", help="chunks (sentences) per model call (default 32)")
    b.add_argument("--max-batch-chars", type=int, metavar="N",
                   help="characters per model call (times the request's cost factor); longer requests run in "
                        "several calls, interleaved with other requests (default 1000)")
    b.add_argument("--max-wait-ms", type=float, metavar="MS", help="how long a request waits for company (default 5)")
    b.add_argument("--max-concurrent-batches", type=int, metavar="N", help="model calls running at once (default 1)")
    lim = ap.add_argument_group("limits")
    lim.add_argument("--max-text-chars", type=int, metavar="N", help="characters per text (default 20000)")
    lim.add_argument("--max-request-chars", type=int, metavar="N", help="characters per request (default 100000)")
    lim.add_argument("--max-texts", type=int, metavar="N", help="texts per request (default 64)")
    lim.add_argument("--max-body-bytes", type=int, metavar="N", help="request body size (default 2 MiB)")
    lim.add_argument("--request-timeout", type=float, metavar="S", help="per-request time limit, then 504 (default 30)")
    lim.add_argument("--max-top-k", type=int, metavar="N", help="largest top_k a request may ask for (default 100)")
    lim.add_argument("--max-shortlist", type=int, metavar="N", help="largest shortlist a request may ask for (default 64)")
    lim.add_argument("--cost-chars-per-s", type=float, metavar="R",
                     help="model speed for admission, in characters per second at the default settings "
                          "(default: measured at start-up)")
    lim.add_argument("--admission-share", type=float, metavar="F",
                     help="share of that speed a request is sure to get; a request needing more than F x the "
                          "timeout is refused with 413 (default 0.5)")
    c = ap.add_argument_group("connections")
    c.add_argument("--max-connections", type=int, metavar="N", help="open connections; more get a 503 (default 256)")
    c.add_argument("--max-connections-per-client", type=int, metavar="N",
                   help="open connections from one address (default 128; behind a proxy, as --max-connections)")
    c.add_argument("--header-timeout", type=float, metavar="S", help="time to send the request headers (default 10)")
    c.add_argument("--body-timeout", type=float, metavar="S", help="time to send the request body, then 408 (default 30)")
    c.add_argument("--keep-alive", type=float, metavar="S", help="idle keep-alive connections close after this (default 5)")
    e = ap.add_argument_group("exposed deployments (off by default; keys themselves only in $CSC_API_KEYS or a file)")
    e.add_argument("--api-keys-file", metavar="FILE", help="one API key per line; /correct and /metrics then need one")
    e.add_argument("--rate-limit-per-s", type=float, metavar="R", help="/correct requests per second per client (0 = off)")
    e.add_argument("--rate-limit-burst", type=int, metavar="N", help="requests a client may send at once (default 20)")
    return ap


def _version() -> str:
    from corrector.model_path import installed_version

    return f"electra-csc {installed_version() or '(not installed)'}"


def settings_error(error: ValidationError) -> str:
    """One line naming the flag (and its variable) and what is wrong with it."""
    flag_of = {field: dest for dest, field in FIELD_OF.items()}
    parts = []
    for e in error.errors():
        name = str(e["loc"][0]) if e["loc"] else ""
        flag = "--" + flag_of.get(name, name).replace("_", "-")
        msg = str(e["msg"]).removeprefix("Value error, ")
        parts.append(f"{flag} ({ENV_PREFIX}{name.upper()}): {msg}" if name else msg)
    return "invalid settings: " + "; ".join(parts)


def settings_from_args(args: argparse.Namespace) -> ServiceSettings:
    overrides: dict[str, Any] = {}
    for dest, value in vars(args).items():
        if value is not None:
            overrides[FIELD_OF.get(dest, dest)] = value
    return ServiceSettings(**overrides)


def export_to_env(settings: ServiceSettings) -> None:
    """Worker processes (--workers > 1) rebuild the settings from CSC_* variables."""
    for name, value in settings.model_dump(mode="json").items():
        if value is None:
            continue
        text = json.dumps(value) if isinstance(value, (dict, list, bool)) else str(value)
        os.environ[f"{ENV_PREFIX}{name.upper()}"] = text


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging setup plus our loggers, so every worker process logs the same way; a line written
    while handling a request ends with its ID (``service/request_id.py``)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["request_id"] = {"()": f"{PACKAGE}.request_id.RequestIdFilter"}
    config["formatters"]["default"]["fmt"] = "%(levelprefix)s %(message)s%(request_tag)s"
    config["handlers"]["default"]["filters"] = ["request_id"]
    config["handlers"]["service_access"] = {**config["handlers"]["access"], "formatter": "default",
                                            "filters": ["request_id"]}  # stdout, as uvicorn's access lines
    for name in ("service", "corrector"):
        config["loggers"][name] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    config["loggers"]["service.access"] = {"handlers": ["service_access"], "level": "INFO", "propagate": False}
    return config


def fail(message: str) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    sys.exit(2)


def check_port(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (None: it can), checked the way uvicorn binds it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as e:
        return f"cannot listen on {host}:{port}: {e.strerror or e}"
    return None


def is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: list[str] | None = None, prog: str = "python -m service") -> None:
    args = build_parser(prog).parse_args(argv)
    try:
        settings = settings_from_args(args)
    except ValidationError as e:
        fail(settings_error(e))
    except ValueError as e:
        fail(f"invalid settings: {str(e).splitlines()[0]}")
    try:
        keys = settings.keys()
    except OSError as e:
        fail(f"invalid settings: --api-keys-file (CSC_API_KEYS_FILE): {e.strerror or e}: {settings.api_keys_file}")
    except ValueError as e:
        fail(f"invalid settings: CSC_API_KEYS / --api-keys-file: {e}")
    if (problem := check_port(settings.host, settings.port)) is not None:  # before the model: seconds earlier
        fail(problem)
    from corrector.bundle import Bundle
    from corrector.config import in_force
    from corrector.model_path import default_model_path
    from corrector.types import CorrectorError

    try:  # fail fast with one line, before uvicorn starts
        bundle = Bundle.load(settings.model_dir or default_model_path())
    except CorrectorError as e:
        fail(str(e))
    try:  # the settings together with the bundle's defaults, as the corrector will check them
        in_force(bundle.corrector_defaults, load=settings.corrector_settings)
    except (TypeError, ValueError) as e:
        fail(f"invalid settings: --corrector-settings: {e}")
    try:
        settings.corrector_overrides()
    except CorrectorError as e:
        fail(f"invalid settings: --protect-file (CSC_PROTECT_FILE): {e}")
    import uvicorn

    from .app import ModelLoadError, create_app, load_corrector, model_speed
    from .protocol import GuardedH11Protocol, protocol_for

    logging.config.dictConfig(log_config(settings.log_level))
    try:  # the model, loaded and timed here: a corrupt graph or a missing GPU is one line, not a traceback
        corrector = load_corrector(settings)
        if settings.cost_chars_per_s is None:  # measured here alone; workers on the same cores share it
            rate = model_speed(corrector, settings) / settings.workers
            settings = settings.model_copy(update={"measured_chars_per_s": rate})
    except ModelLoadError as e:
        fail(str(e))
    if not keys and not is_loopback(settings.host):
        log.warning("listening on %s without API keys: anyone who can reach this port can use the service "
                    "(see docs/service.md, 'Exposed deployments')", settings.host)
    common: dict[str, Any] = {
        "host": settings.host, "port": settings.port, "log_level": settings.log_level,
        "log_config": log_config(settings.log_level), "access_log": False,  # service.access writes it, with the ID
        "timeout_graceful_shutdown": max(1, round(settings.shutdown_timeout_s)),
        "timeout_keep_alive": settings.keep_alive_s, "proxy_headers": False, "server_header": False,
    }
    if settings.workers > 1:
        del corrector  # each worker loads its own; the measured speed travels in CSC_COST_CHARS_PER_S
        export_to_env(settings)
        uvicorn.run(f"{PACKAGE}.app:create_app", factory=True, workers=settings.workers, http=GuardedH11Protocol,
                    **common)
    else:
        uvicorn.run(create_app(settings, corrector=corrector), http=protocol_for(settings), **common)
