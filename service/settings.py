"""Service settings: environment variables with the ``CSC_`` prefix, or the flags of ``python -m service``.

Nothing here is instantiated at import time; ``create_app()`` and the CLI build a ``ServiceSettings``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic.json_schema import JsonDict
from pydantic_settings import BaseSettings, SettingsConfigDict

from corrector.bundle import Device, Precision

from .schemas import ServerDecodingSettings

ENV_PREFIX = "CSC_"


def setting(default: Any = None, help: str = "", *, group: str, flag: str | None = None, short: str | None = None,
            metavar: str | None = None, shown: str | None = None, default_factory: Any = None, **limits: Any) -> Any:
    """A setting with its flag of ``python -m service`` (``service.cli`` builds every flag from these): ``help``,
    the flag's ``group``, its name when it is not the field's (``--request-timeout`` for ``request_timeout_s``),
    a ``short`` alias, the ``metavar``, and the default as the help shows it (``shown``; default: the value).
    ``flag=""``: a variable only, no flag."""
    extra: JsonDict = {"group": group, "flag": flag, "short": short, "metavar": metavar, "shown": shown}
    if default_factory is not None:
        return Field(default_factory=default_factory, description=help, json_schema_extra=extra, **limits)
    return Field(default, description=help, json_schema_extra=extra, **limits)


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True, protected_namespaces=())

    # --- server (read by the CLI) ---------------------------------------------------------------
    host: str = setting("127.0.0.1", "address to bind; 0.0.0.0 for all interfaces", group="server")
    port: int = setting(8000, "port", group="server", ge=0, le=65535)
    workers: int = setting(1, "processes, each with its own model and /metrics", group="server", ge=1)
    log_level: Literal["critical", "error", "warning", "info", "debug"] = setting("info", "", group="server")
    access_log: bool = setting(True, "do not log every request", group="server")  # as the --no- flag says it
    shutdown_timeout_s: float = setting(8.0, "grace period for requests in flight; `docker stop` kills after 10 s",
                                        group="server", flag="--shutdown-timeout", metavar="S", gt=0)

    # --- model -----------------------------------------------------------------------------------
    model_dir: Path | None = setting(None, "model bundle directory", group="model", flag="--model", short="-m",
                                     metavar="DIR", shown="$CSC_MODEL_DIR or the shipped one")
    device: Device = setting("auto", "auto = CUDA when it really loads, else CPU",
                                                     group="model")
    threads: int = setting(0, "ONNX Runtime intra-op threads per session; 0 = its default", group="model", ge=0)
    precision: Precision = setting("auto", "CPU graphs: auto (the bundle's recommendation), fp32 or int8",
                                   group="model")
    corrector_settings: dict[str, Any] = setting(
        help='decoding settings for every request, e.g. \'{"protect_dictionary_words": true}\'', group="model",
        metavar="JSON", shown="{}", default_factory=dict)  # CorrectorConfig overrides, JSON in env
    protect_file: Path | None = setting(None, "words never edited inside, one a line, for every request (names, "
                                        "terms: a user dictionary)", group="model", metavar="FILE", shown="none")

    # --- micro-batching --------------------------------------------------------------------------
    batching: bool = setting(True, "one model call per request instead of gathering concurrent requests",
                             group="micro-batching")
    max_batch_size: int = setting(32, "chunks (sentences) per unit the scheduler hands the corrector",
                                  group="micro-batching", metavar="N", ge=1)
    # a larger request is split. (The corrector's own batch_size, a decoding setting, then cuts a unit into ONNX
    # calls of similar length: two sizes of two layers, both 32 by default.)
    max_batch_chars: int = setting(1000, "characters per model call (times the request's cost factor); longer "
                                   "requests run in several calls, interleaved with other requests",
                                   group="micro-batching", metavar="N", ge=1)
    max_wait_ms: float = setting(5.0, "how long a request waits for company", group="micro-batching", metavar="MS",
                                 ge=0)
    max_concurrent_batches: int = setting(1, "model calls running at once, each in a worker thread",
                                          group="micro-batching", metavar="N", ge=1)

    # --- limits ----------------------------------------------------------------------------------
    max_text_chars: int = setting(20_000, "characters per text", group="limits", metavar="N", ge=1)
    max_request_chars: int = setting(100_000, "characters of all texts of one request", group="limits", metavar="N",
                                     ge=1)
    max_texts: int = setting(64, "texts per request", group="limits", metavar="N", ge=1)
    max_body_bytes: int = setting(2 * 1024 * 1024, "raw request body, which JSON escapes make longer than its "
                                  "characters", group="limits", metavar="N", shown="2 MiB", ge=1)
    request_timeout_s: float = setting(30.0, "queueing plus model time of one request, then 504", group="limits",
                                       flag="--request-timeout", metavar="S", gt=0)
    max_top_k: int = setting(100, "largest top_k a request may ask for; above it, 422", group="limits", metavar="N",
                             ge=0, le=1000)
    max_shortlist: int = setting(64, "largest shortlist a request may ask for; above it, 422", group="limits",
                                 metavar="N", ge=1, le=1000)
    # admission: a request that cannot finish within its timeout is refused before any work
    cost_chars_per_s: float | None = setting(None, "model speed for admission, in characters per second at the "
                                             "default settings, fixed", group="limits", metavar="R",
                                             shown="measured as it runs", gt=0)
    measured_chars_per_s: float | None = setting(None, "the start-up measurement (set by the CLI for its worker "
                                                 "processes)", group="limits", flag="", gt=0)
    admission_share: float = setting(0.5, "share of that speed a request is sure to get; a request needing more "
                                     "than F x the timeout is refused with 413", group="limits", metavar="F", gt=0,
                                     le=1)

    # --- connections -----------------------------------------------------------------------------
    max_connections: int = setting(256, "open connections; more get a JSON 503 and are closed", group="connections",
                                   metavar="N", ge=1)
    max_connections_per_client: int = setting(128, "open connections from one address; behind a proxy, as "
                                              "--max-connections", group="connections", metavar="N", ge=1)
    header_timeout_s: float = setting(10.0, "from connecting (or the last response) to the end of the headers",
                                      group="connections", flag="--header-timeout", metavar="S", gt=0)
    body_timeout_s: float = setting(30.0, "from the headers to the end of the body, then 408", group="connections",
                                    flag="--body-timeout", metavar="S", gt=0)
    keep_alive_s: float = setting(5.0, "an idle keep-alive connection is closed after this", group="connections",
                                  flag="--keep-alive", metavar="S", gt=0)

    # --- exposed deployments (off by default) ----------------------------------------------------
    api_keys: str = setting("", "comma-separated API keys (a variable only: ps shows flags)", group="exposed",
                            flag="", repr=False)
    api_keys_file: Path | None = setting(None, "one API key per line; /correct and /metrics then need one",
                                         group="exposed", metavar="FILE", shown="none")
    rate_limit_per_s: float = setting(0.0, "/correct requests per second per client; 0 = off", group="exposed",
                                      metavar="R", ge=0)
    rate_limit_burst: int = setting(20, "requests a client may send at once before the rate applies",
                                    group="exposed", metavar="N", ge=1)

    @field_validator("corrector_settings", mode="before")
    @classmethod
    def _known_settings_of_the_right_types(cls, v: Any) -> Any:
        if isinstance(v, str):  # flags pass JSON text; the env source already decodes it
            try:
                v = json.loads(v) if v.strip() else {}
            except json.JSONDecodeError as e:
                raise ValueError(f"not valid JSON ({e})") from None
        if not isinstance(v, dict):
            raise ValueError("must be a JSON object of decoding settings")
        try:
            return ServerDecodingSettings.model_validate(v).settings()
        except ValidationError as e:
            raise ValueError(one_line(e)) from None

    def keys(self) -> frozenset[str]:
        """The API keys from ``api_keys`` and ``api_keys_file`` (empty: no key needed). OSError when the file
        cannot be read."""
        keys = {k.strip() for k in self.api_keys.split(",")}
        if self.api_keys_file is not None:
            text = self.api_keys_file.read_text(encoding="utf-8")
            keys |= {line.strip() for line in text.splitlines() if not line.lstrip().startswith("#")}
        keys = {k for k in keys if k}
        if short := [k for k in keys if len(k) < MIN_KEY_CHARS]:
            raise ValueError(f"an API key must have at least {MIN_KEY_CHARS} characters ({len(short)} shorter): make "
                             "one with python -c 'import secrets; print(secrets.token_urlsafe(24))'")
        return frozenset(keys)


    def corrector_overrides(self) -> dict[str, Any]:
        """``corrector_settings`` with the words of ``protect_file`` added to its ``protect``. CorrectorError when
        the file cannot be read."""
        from corrector.guards import read_word_file

        out = dict(self.corrector_settings)
        if self.protect_file is not None:
            out["protect"] = (*out.get("protect", ()), *read_word_file(self.protect_file))
        return out


MIN_KEY_CHARS = 16  # a shorter key can be guessed; secrets.token_urlsafe(24) gives 32


def one_line(error: ValidationError) -> str:
    """A pydantic error as one line: ``name: message; name: message``."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in error.errors())
