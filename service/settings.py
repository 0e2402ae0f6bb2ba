"""Service settings: environment variables with the ``CSC_`` prefix, or the flags of ``python -m service``.

Nothing here is instantiated at import time; ``create_app()`` and the CLI build a ``ServiceSettings``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from corrector.bundle import Precision

from .schemas import ServerDecodingSettings

ENV_PREFIX = "CSC_"


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True, protected_namespaces=())

    # --- model -----------------------------------------------------------------------------------
    model_dir: Path | None = None  # bundle directory; None = the shipped one (CSC_MODEL_DIR sets this field)
    device: Literal["auto", "cpu", "cuda"] = "auto"  # auto = CUDA when it really loads, else CPU
    precision: Precision = "auto"  # CPU graphs; auto = what the bundle's manifest recommends
    threads: int = Field(default=0, ge=0)  # ONNX Runtime intra-op threads per session; 0 = its default
    corrector_settings: dict[str, Any] = Field(default_factory=dict)  # CorrectorConfig overrides, JSON in env
    protect_file: Path | None = None  # words never edited inside, one a line, for every request (a user dictionary)

    # --- server (read by the CLI) ---------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    workers: int = Field(default=1, ge=1)  # processes; each loads its own model and has its own /metrics
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info"
    access_log: bool = True  # one log line per request
    shutdown_timeout_s: float = Field(default=8.0, gt=0)  # graceful shutdown; `docker stop` kills after 10 s

    # --- limits ----------------------------------------------------------------------------------
    max_text_chars: int = Field(default=20_000, ge=1)  # one text
    max_request_chars: int = Field(default=100_000, ge=1)  # all texts of one request together
    max_texts: int = Field(default=64, ge=1)  # texts per request
    max_body_bytes: int = Field(default=2 * 1024 * 1024, ge=1)  # raw request body (JSON escapes make it > chars)
    request_timeout_s: float = Field(default=30.0, gt=0)  # queueing + model time for one request, then 504
    max_top_k: int = Field(default=100, ge=0, le=1000)  # per-request top_k above this: 422
    max_shortlist: int = Field(default=64, ge=1, le=1000)  # per-request shortlist above this: 422

    # --- admission: a request that cannot finish within its timeout is refused before any work -------
    cost_chars_per_s: float | None = Field(default=None, gt=0)  # model speed, fixed; None = measured as it runs
    measured_chars_per_s: float | None = Field(default=None, gt=0)  # the start-up measurement (set by the CLI for
    #                                                                 its worker processes; not a flag)
    admission_share: float = Field(default=0.5, gt=0, le=1)  # share of that speed a request is sure to get

    # --- connections -----------------------------------------------------------------------------
    max_connections: int = Field(default=256, ge=1)  # open connections; more get a JSON 503 and are closed
    max_connections_per_client: int = Field(default=128, ge=1)  # from one address (behind a proxy: max_connections)
    header_timeout_s: float = Field(default=10.0, gt=0)  # from connecting (or the last response) to the headers
    body_timeout_s: float = Field(default=30.0, gt=0)  # from the headers to the end of the body, then 408
    keep_alive_s: float = Field(default=5.0, gt=0)  # an idle keep-alive connection is closed after this

    # --- exposed deployments (off by default) ----------------------------------------------------
    api_keys: str = Field(default="", repr=False)  # comma-separated keys; CSC_API_KEYS (not a flag: ps shows flags)
    api_keys_file: Path | None = None  # one key per line; with either, /correct and /metrics need a key
    rate_limit_per_s: float = Field(default=0.0, ge=0)  # /correct requests per second per client; 0 = off
    rate_limit_burst: int = Field(default=20, ge=1)  # requests a client may send at once before the rate applies

    # --- micro-batching --------------------------------------------------------------------------
    batching: bool = True  # False = one model call per request
    max_batch_size: int = Field(default=32, ge=1)  # chunks (sentences) per unit the scheduler hands the corrector;
    #                                                a larger request is split. (The corrector's own batch_size, a
    #                                                decoding setting, then cuts a unit into ONNX calls of similar
    #                                                length: two sizes of two layers, both 32 by default.)
    max_batch_chars: int = Field(default=1000, ge=1)  # cost characters per model call; longer texts are cut
    max_wait_ms: float = Field(default=5.0, ge=0)  # how long the first request of a batch waits for company
    max_concurrent_batches: int = Field(default=1, ge=1)  # model calls running at once, each in a worker thread

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
