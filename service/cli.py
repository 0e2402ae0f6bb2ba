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
from dataclasses import dataclass
from types import UnionType
from typing import Any, Literal, NoReturn, Union, get_args, get_origin

from pydantic import ValidationError

from .settings import ENV_PREFIX, ServiceSettings

log = logging.getLogger("service")


PACKAGE = __package__ or "service"  # "corrector.service" where installed, "service" in a checkout
GROUPS = {"server": "server", "model": "model", "micro-batching": "micro-batching", "limits": "limits",
          "connections": "connections",
          "exposed": "exposed deployments (off by default; keys themselves only in $CSC_API_KEYS or a file)"}


@dataclass(frozen=True)
class Flag:
    """One flag of ``python -m service``, as ``ServiceSettings`` declares its field (``settings.setting``)."""

    field: str
    names: tuple[str, ...]  # the flag, then its short alias
    group: str
    kwargs: dict[str, Any]  # for argparse's add_argument


def flags() -> list[Flag]:
    """Every setting that has a flag, in declaration order: its name (``--`` and the field's, or the declared
    one; ``--no-NAME`` for a switch that is on by default), type or choices, metavar and help with the default."""
    out = []
    for name, info in ServiceSettings.model_fields.items():
        extra = info.json_schema_extra
        assert isinstance(extra, dict), f"{name}: declare it with settings.setting"
        if extra["flag"] == "":
            continue
        kind = _unwrap_optional(info.annotation)
        flag = str(extra["flag"] or "--" + name.replace("_", "-"))
        kwargs: dict[str, Any] = {"dest": name}
        default = info.get_default(call_default_factory=True)
        if kind is bool:
            assert default is True, f"{name}: a switch is on by default and its flag turns it off"
            flag = "--no-" + flag.removeprefix("--")
            kwargs.update(action="store_const", const=False, help=info.description)
        else:
            if get_origin(kind) is Literal:
                kwargs["choices"] = list(get_args(kind))
            else:
                kwargs["type"] = kind if kind in (int, float) else str  # paths and JSON are parsed by the settings
            if extra["metavar"]:
                kwargs["metavar"] = extra["metavar"]
            shown = extra["shown"] if extra["shown"] is not None else f"{default:g}" if isinstance(default, float) \
                else default
            kwargs["help"] = f"{info.description} (default {shown})".lstrip()
        names = (flag, str(extra["short"])) if extra["short"] else (flag,)
        out.append(Flag(name, names, str(extra["group"]), kwargs))
    return out


def _unwrap_optional(kind: Any) -> Any:
    """``X | None`` -> X."""
    args = [a for a in get_args(kind) if a is not type(None)]
    return args[0] if get_origin(kind) in (Union, UnionType) and len(args) == 1 else kind


def build_parser(prog: str = "python -m service") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=prog,
        description="Serve Chinese spelling correction over HTTP (POST /correct, GET /, /health, /ready, "
                    f"/metrics, /docs). Every option can also be set as an environment variable {ENV_PREFIX}NAME.",
    )
    ap.add_argument("--version", action="version", version=_version())
    groups = {key: ap.add_argument_group(title) for key, title in GROUPS.items()}
    for flag in flags():
        groups[flag.group].add_argument(*flag.names, **flag.kwargs)
    return ap


def _version() -> str:
    from corrector.model_path import installed_version

    return f"electra-csc {installed_version() or '(not installed)'}"


def settings_error(error: ValidationError) -> str:
    """One line naming the flag (and its variable) and what is wrong with it."""
    flag_of = {f.field: f.names[0] for f in flags()}
    parts = []
    for e in error.errors():
        name = str(e["loc"][0]) if e["loc"] else ""
        flag = flag_of.get(name, "--" + name.replace("_", "-"))
        msg = str(e["msg"]).removeprefix("Value error, ")
        parts.append(f"{flag} ({ENV_PREFIX}{name.upper()}): {msg}" if name else msg)
    return "invalid settings: " + "; ".join(parts)


def settings_from_args(args: argparse.Namespace) -> ServiceSettings:
    overrides: dict[str, Any] = {}
    for dest, value in vars(args).items():
        if value is not None:
            overrides[dest] = value
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
    from .descriptors import raise_open_files_limit
    from .protocol import GuardedH11Protocol, protocol_for

    logging.config.dictConfig(log_config(settings.log_level))
    try:  # the model, loaded and timed here: a corrupt graph or a missing GPU is one line, not a traceback
        corrector = load_corrector(settings)
        if settings.cost_chars_per_s is None:  # measured here alone; workers on the same cores share it
            rate = model_speed(corrector, settings) / settings.workers
            settings = settings.model_copy(update={"measured_chars_per_s": rate})
    except ModelLoadError as e:
        fail(str(e))
    before, after = raise_open_files_limit()  # workers inherit it
    if before != after:
        log.info("file descriptors: soft limit raised from %s to %s", f"{before:,}" if before else "unlimited",
                 f"{after:,}" if after else "unlimited")
    if not keys and not is_loopback(settings.host):
        log.warning("listening on %s without API keys: anyone who can reach this port can use the service "
                    "(see docs/service.md, 'Exposed deployments')", settings.host)
    common: dict[str, Any] = {
        "host": settings.host, "port": settings.port, "log_level": settings.log_level,
        "log_config": log_config(settings.log_level), "access_log": False,  # service.access writes it, with the ID
        "timeout_graceful_shutdown": max(1, round(settings.shutdown_timeout_s)),
        "timeout_keep_alive": settings.keep_alive_s, "proxy_headers": False, "server_header": False,
        "ws": "none",  # no WebSocket endpoint (service.upgrade_refusal)
    }
    if settings.workers > 1:
        del corrector  # each worker loads its own; the measured speed travels in CSC_COST_CHARS_PER_S
        export_to_env(settings)
        uvicorn.run(f"{PACKAGE}.app:create_app", factory=True, workers=settings.workers, http=GuardedH11Protocol,
                    **common)
    else:
        uvicorn.run(create_app(settings, corrector=corrector), http=protocol_for(settings), **common)
