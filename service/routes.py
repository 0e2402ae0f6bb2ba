"""HTTP routes, one router per concern: correction, operations (health, readiness, metrics), demo page."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, Response

from corrector import Correction, CorrectorError

from .admitted import Refused, ServiceClosing, TooSlow
from .batching import INLINE_CHARS
from .deps import CorrectorDep, MetricsDep, RunnerDep, SettingsDep
from .errors import JSONResponse, over_maximum, server_maxima
from .json_body import ParsedBodyRoute
from .metrics import CLIENT_GONE
from .schemas import (
    CorrectionOut,
    CorrectRequest,
    CorrectResponse,
    ErrorResponse,
    HealthResponse,
    ReadyResponse,
)
from .settings import ServiceSettings

STATIC_DIR = Path(__file__).resolve().parent / "static"


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorResponse} for code in codes}


JSON_ROUTES = frozenset({("POST", "/correct")})  # bodies that must be application/json (else 415)
KEYED_PATHS = frozenset({"/correct", "/metrics"})  # need an API key when keys are set
LIMITED_ROUTES = frozenset({("POST", "/correct")})  # count against a client's rate limit when one is set

correct_router = APIRouter(tags=["correction"], route_class=ParsedBodyRoute)  # its body parsed once, off the loop
ops_router = APIRouter(tags=["operations"])
demo_router = APIRouter(include_in_schema=False)


@correct_router.post("/correct", response_model=CorrectResponse,
                     responses=_errors(400, 401, 408, 413, 415, 422, 429, 503, 504))
async def correct(body: CorrectRequest, request: Request, corrector: CorrectorDep, runner: RunnerDep,
                  settings: SettingsDep, metrics: MetricsDep) -> Response:
    """Correct one text (``text``) or several (``texts``). Every target has its source's length.

    Any decoding setting (``threshold``, ``max_edits``, ``protect``, ``use_lm``, ...) may be given
    alongside; it applies to every text of the request. A request that could not finish within the
    server's timeout is refused before any work: 413 when it is too large for this server at all, 503
    (with ``Retry-After``) when the work already admitted leaves no room for it now; and 413 as soon as
    the measured speed of its own text shows that the rest cannot finish in time."""
    texts = body.items()
    check_limits(texts, settings)
    check_maxima(body, settings)
    timeout = settings.request_timeout_s
    work = asyncio.ensure_future(runner.correct(texts, body.options(), timeout=timeout))
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        done, _ = await asyncio.wait({work, gone}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (work, gone):  # a cancelled request gets no further units
            task.cancel()
    if work not in done:
        if gone in done:
            return JSONResponse({"detail": "the client disconnected"}, status_code=CLIENT_GONE)  # counted, not sent
        raise HTTPException(504, f"the correction took longer than {timeout:g} s")
    try:
        results = work.result()
    except Refused as e:
        metrics.refused.labels("busy" if e.busy else "cost").inc()
        if e.busy:
            retry = str(max(1, min(round(timeout), math.ceil(e.admission.busy_s))))
            raise HTTPException(503, e.message(), headers={"Retry-After": retry}) from None
        raise HTTPException(413, e.message()) from None
    except TooSlow as e:
        metrics.refused.labels("slow" if e.text_slow else "late").inc()
        if not e.text_slow:  # the service's state, not the text: a retry may succeed
            retry = str(max(1, min(round(timeout), math.ceil(e.retry_s)))) if e.busy else str(max(1, round(timeout / 2)))
            raise HTTPException(503, str(e), headers={"Retry-After": retry}) from None
        raise HTTPException(413, str(e)) from None
    except ServiceClosing:
        raise HTTPException(503, "the service is shutting down") from None
    except CorrectorError as e:
        raise HTTPException(422, str(e)) from None
    except Exception:
        metrics.model_errors.inc()
        raise
    metrics.texts.inc(len(texts))
    metrics.chars.inc(sum(map(len, texts)))
    if sum(len(c.source) for c in results) <= INLINE_CHARS:
        return _response(corrector.name, corrector.version, results)
    return await asyncio.to_thread(_response, corrector.name, corrector.version, results)  # off the event loop: a
    # long text's answer (thousands of edits) takes a tenth of a second to build


def _response(name: str, version: str, results: list[Correction]) -> JSONResponse:
    out = CorrectResponse(model=name, version=version, results=[CorrectionOut.from_correction(c) for c in results])
    return JSONResponse(out.model_dump())


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (the body is already read: the next message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def check_limits(texts: list[str], settings: ServiceSettings) -> None:
    """413 with a message naming the limit."""
    if len(texts) > settings.max_texts:
        raise HTTPException(413, f"{len(texts)} texts in one request; the limit is {settings.max_texts}")
    for i, t in enumerate(texts):
        if len(t) > settings.max_text_chars:
            raise HTTPException(413, f"text {i} has {len(t)} characters; the limit is {settings.max_text_chars}")
    total = sum(map(len, texts))
    if total > settings.max_request_chars:
        raise HTTPException(413, f"the request has {total} characters; the limit is {settings.max_request_chars}")


def check_maxima(body: CorrectRequest, settings: ServiceSettings) -> None:
    """422, in the shape of the other field errors, for a cost setting above this server's maximum."""
    errors = [over_maximum(name, limit) for name, limit in server_maxima(settings).items()
              if (value := getattr(body, name)) is not None and value > limit]
    if errors:
        raise HTTPException(422, errors)


@ops_router.get("/health", response_model=HealthResponse)
async def health() -> HealthResponse:
    """The process is up and serving (says nothing about the model)."""
    return HealthResponse()


ops_router.add_api_route("/health", health, methods=["HEAD"], include_in_schema=False)


@ops_router.get("/ready", response_model=ReadyResponse, responses={503: {"model": ReadyResponse}})
async def ready(request: Request) -> Response:
    """200 once the model is loaded and the batcher runs; 503 before that and while shutting down."""
    corrector = request.app.state.corrector
    if corrector is None or request.app.state.runner is None:
        return JSONResponse(ReadyResponse(status="not ready").model_dump(), status_code=503,
                            headers={"Retry-After": "5"})
    return JSONResponse(ReadyResponse(status="ready", model=corrector.name, version=corrector.version,
                                      provider=corrector.networks.provider,
                                      precision=corrector.networks.precision).model_dump())


ops_router.add_api_route("/ready", ready, methods=["HEAD"], include_in_schema=False)


@ops_router.get("/metrics", response_class=Response,
                responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
async def metrics_text(metrics: MetricsDep) -> Response:
    """Prometheus text format: requests, latency, errors, batch sizes, model info."""
    body, content_type = metrics.render()
    return Response(body, media_type=content_type)


@demo_router.api_route("/", methods=["GET", "HEAD"])
async def demo_page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")
