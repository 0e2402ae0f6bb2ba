"""``--engine ray``: the same shards and the same Corrector, scheduled by Ray Data.

    shard list --from_items--> map_batches(CorrectorActor, pool of --num-actors) --> rows, in order

Each actor builds one Corrector in ``__init__`` from the bundle path in a :class:`ModelSpec` (the
worker reads the weights; they are never pickled), then takes one shard at a time: it reads the
shard's lines itself and corrects them with :func:`correct_shard`, exactly as the local engine does.
Ray Data keeps the rows in input order (``preserve_order``) and the driver writes the shards. Input
files and the bundle must be at the same paths on every node (a shared filesystem).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from typing import Any

from corrector.batch.engines import RESULT_KEYS, ModelSpec, Result, correct_shard
from corrector.batch.inputs import ReadOptions, Shard
from corrector.model_path import install_hint
from corrector.types import CorrectorError


def ray_module() -> Any:
    """``ray`` with Ray Data, or a clear error when the 'distributed' extra is not installed."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise CorrectorError(f"--engine ray needs Ray: {install_hint('distributed')}") from None
    return ray


class CorrectorActor:
    """One per Ray actor: loads its Corrector once, then corrects every batch it is handed."""

    def __init__(self, spec: dict[str, Any], opts: dict[str, Any], batch_size: int):
        self.fixer = ModelSpec(**spec).load()
        self.opts = ReadOptions(**opts)
        self.batch_size = batch_size

    def __call__(self, shards: Any) -> Any:  # pyarrow.Table of shard descriptors -> pyarrow.Table of rows
        import pyarrow as pa

        rows = [r for d in shards.to_pylist() for r in correct_shard(self.fixer, Shard(**d), self.opts,
                                                                       self.batch_size)]
        return pa.Table.from_pylist(rows, schema=_result_schema())


def _result_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(k, pa.int64() if k in ("shard", "line") else pa.string()) for k in RESULT_KEYS])


def run_ray(spec: ModelSpec, shards: list[Shard], opts: ReadOptions, *, batch_size: int,
            num_actors: int | None = None, actor_cpus: float = 1.0, address: str | None = None,
            num_cpus: int | None = None) -> Iterator[Result]:
    """Corrected rows in input order. Joins the cluster at ``address``, else starts a local Ray runtime
    with ``num_cpus`` (default: all); reuses a runtime this process already started."""
    ray = ray_module()
    started = not ray.is_initialized()
    if started:
        # Ray's notice that a local runtime has token authentication on (its default, and what we want) is no warning
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
        try:
            ray.init(address=address, num_cpus=None if address else num_cpus, include_dashboard=False,
                     logging_level=logging.WARNING, log_to_driver=False)
        except Exception as e:  # ConnectionError, RuntimeError, ValueError for a bad address
            where = f"join the Ray cluster at {address}" if address else "start a local Ray runtime"
            raise CorrectorError(f"cannot {where}: {_last_line(e)}") from None
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "progress bars disabled": ours show
    try:
        if num_actors is None:
            num_actors = max(1, math.floor(ray.cluster_resources().get("CPU", 1) / actor_cpus))
        num_actors = min(num_actors, len(shards))  # an actor with no shard to take would only load the model
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ctx.enable_progress_bars = False
        ds = ray.data.from_items([s.to_dict() for s in shards], override_num_blocks=len(shards))
        # one shard per call and per actor at a time: an idle actor takes the next shard (load balancing)
        pool = ray.data.ActorPoolStrategy(size=num_actors, max_tasks_in_flight_per_actor=1)
        ds = ds.map_batches(CorrectorActor, batch_size=1, batch_format="pyarrow", compute=pool, num_cpus=actor_cpus,
                            fn_constructor_kwargs={"spec": spec.to_dict(), "opts": opts.to_dict(),
                                                   "batch_size": batch_size})
        for table in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            yield from table.to_pylist()
    except ray.exceptions.RayError as e:
        raise CorrectorError(f"the Ray job failed: {_last_line(e)}") from None
    finally:
        if started:
            ray.shutdown()


def _last_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[-1][:300] if lines else type(e).__name__
