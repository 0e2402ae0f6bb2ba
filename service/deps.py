"""Typed dependencies. Everything lives on ``app.state`` (set by ``create_app`` and its lifespan), so tests
can swap any of them with ``app.dependency_overrides[get_x] = ...``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from .batching import Runner
from .metrics import Metrics
from .settings import ServiceSettings
from .work import SupportsWorkUnits

NOT_READY = "the model is not loaded yet (or the service is shutting down)"


def get_settings(request: Request) -> ServiceSettings:
    settings: ServiceSettings = request.app.state.settings
    return settings


def get_metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def get_corrector(request: Request) -> SupportsWorkUnits:
    corrector: SupportsWorkUnits | None = request.app.state.corrector
    if corrector is None:
        raise HTTPException(503, NOT_READY, headers={"Retry-After": "5"})
    return corrector


def get_runner(request: Request) -> Runner:
    runner: Runner | None = request.app.state.runner
    if runner is None:
        raise HTTPException(503, NOT_READY, headers={"Retry-After": "5"})
    return runner


SettingsDep = Annotated[ServiceSettings, Depends(get_settings)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
CorrectorDep = Annotated[SupportsWorkUnits, Depends(get_corrector)]
RunnerDep = Annotated[Runner, Depends(get_runner)]
