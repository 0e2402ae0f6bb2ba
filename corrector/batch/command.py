"""``python -m corrector batch``: plan shards, skip the finished ones, run an engine, write, report.

    python -m corrector batch --input corpus.txt --output out/                  # this machine
    python -m corrector batch --input 'data/*.jsonl' --output out/ --engine ray --address auto
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from corrector.batch.engines import ModelSpec
from corrector.batch.inputs import (
    INPUT_FORMATS,
    InputFile,
    ReadOptions,
    find_inputs,
    integer_ids,
    parquet_module,
    plan_shards,
)
from corrector.batch.shards import OUTPUT_FORMATS, OutputDir
from corrector.cli.options import CliError, decoding_args, decoding_settings

JOB_VERSION = 1


def batch_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m corrector batch",
        description="Correct a corpus into ordered output shards (part-00000.jsonl, ...), with errors.jsonl "
                    "and summary.json; a rerun resumes, skipping finished shards.")
    ap.add_argument("--input", "-i", required=True,
                    help="a text file (one text per line), a JSONL or Parquet file, a directory or a glob")
    ap.add_argument("--output", "-o", required=True, help="output directory")
    ap.add_argument("--format", choices=OUTPUT_FORMATS, default="jsonl", help="output shard format")
    ap.add_argument("--input-format", choices=INPUT_FORMATS, default="auto",
                    help="auto: .jsonl/.ndjson/.json are JSONL, .parquet/.pq Parquet, anything else text")
    ap.add_argument("--text-field", default="text", help="JSONL field or Parquet column to correct")
    ap.add_argument("--id-field", default="id", help="copied into the output rows when the input has it")
    ap.add_argument("--shard-size", type=int, default=10_000, help="input lines (rows) per output shard")
    ap.add_argument("--max-chars", type=int, default=100_000, help="longer texts go to errors.jsonl")
    ap.add_argument("--batch-size", type=int, default=256, dest="lines_per_batch",
                    help="texts per correct_batch call, counted from each shard's start, on either engine; "
                         "the model's own batch is --set batch_size=N")
    ap.add_argument("--engine", choices=("local", "ray"), default="local")
    ap.add_argument("--address", help="Ray cluster to join (e.g. auto, HOST:6379); default: start a local one")
    ap.add_argument("--num-actors", type=int, help="Ray actors, one Corrector each (default: CPUs / --actor-cpus)")
    ap.add_argument("--actor-cpus", type=float, default=1.0, help="CPUs per Ray actor (its ONNX Runtime threads)")
    ap.add_argument("--num-cpus", type=int, help="CPUs of the local Ray runtime (default: all)")
    decoding_args(ap, without=("batch_size",))  # --batch-size is lines per call here
    return ap


def run_batch(argv: list[str]) -> int:
    t0 = time.perf_counter()
    args = batch_parser().parse_args(argv)
    _check_args(args)
    if args.engine == "ray":
        from corrector.batch.on_ray import ray_module

        ray_module()  # fail now, with the install command, rather than after planning
    opts = ReadOptions(args.text_field, args.id_field, args.max_chars)
    files = find_inputs(args.input, args.input_format)
    if args.format == "parquet" or any(f.format == "parquet" for f in files):
        parquet_module()
    shards = plan_shards(files, args.shard_size, opts)

    from corrector.model_path import default_model_path

    model = Path(args.model) if args.model else default_model_path()
    threads = max(1, int(args.actor_cpus)) if args.engine == "ray" else 0
    spec = ModelSpec(str(model.resolve()), args.device, args.precision, threads, decoding_settings(args),
                     str(Path(args.lm).resolve()) if args.lm else None)
    fixer = spec.load()  # a bad bundle or setting fails here, before any output is written

    out = OutputDir(Path(args.output), args.format, len(shards),
                    integer_ids=args.format == "parquet" and integer_ids(files, opts.id_field))
    out.prepare(_job(args, files, spec, opts))
    pending = [s for s in shards if not out.done(s.index)]
    from tqdm import tqdm

    with tqdm(total=sum(s.lines for s in pending), unit=" lines", file=sys.stderr, disable=None) as bar:
        if not pending:
            done_now = 0
        elif args.engine == "local":
            from corrector.batch.local import run_local

            done_now = out.write(pending, run_local(fixer, pending, opts, args.lines_per_batch), bar)
        else:
            del fixer  # each actor loads its own
            from corrector.batch.on_ray import run_ray

            rows = run_ray(spec, pending, opts, batch_size=args.lines_per_batch, num_actors=args.num_actors,
                           actor_cpus=args.actor_cpus, address=args.address, num_cpus=args.num_cpus)
            done_now = out.write(pending, rows, bar)
    seconds = time.perf_counter() - t0
    summary = out.report(len(shards), {
        "engine": args.engine, "shards": len(shards), "shards_already_done": len(shards) - len(pending),
        "corrected_this_run": done_now, "seconds": round(seconds, 2),
        "lines_per_s": round(done_now / seconds, 1) if seconds > 0 else 0.0,
    })
    sys.stdout.write(
        f"{summary['lines_in']} lines in, {summary['corrected']} corrected ({summary['changed']} changed), "
        f"{summary['errors']} errors; this run {done_now} lines in {seconds:.1f} s, "
        f"{summary['lines_per_s']} lines/s; {len(shards)} shards in {args.output}"
        + (f" ({summary['shards_already_done']} already done)" if summary["shards_already_done"] else "") + "\n")
    return 0


def _check_args(args: argparse.Namespace) -> None:
    for flag in ("shard_size", "max_chars", "lines_per_batch", "num_actors", "num_cpus"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            name = "batch-size" if flag == "lines_per_batch" else flag.replace("_", "-")
            raise CliError(f"--{name} must be at least 1, got {value}")
    if args.actor_cpus <= 0:
        raise CliError(f"--actor-cpus must be positive, got {args.actor_cpus}")
    if args.engine != "ray":
        for flag in ("address", "num_actors", "num_cpus"):
            if getattr(args, flag) is not None:
                raise CliError(f"--{flag.replace('_', '-')} needs --engine ray")


def _job(args: argparse.Namespace, files: list[InputFile], spec: ModelSpec, opts: ReadOptions) -> dict[str, Any]:
    """What must not change between a run and its resumption (the engine and its actors may).

    The batch size is part of it: the int8 CPU graphs make results shift slightly with batch composition.
    """
    inputs = []
    for f in files:
        st = os.stat(f.path)
        inputs.append({"path": str(Path(f.path).resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    return json.loads(json.dumps({
        "version": JOB_VERSION, "inputs": inputs, "input_formats": sorted({f.format for f in files}),
        "read": opts.to_dict(), "shard_size": args.shard_size, "batch_size": args.lines_per_batch,
        "format": args.format,
        "model": spec.model, "precision": spec.precision, "settings": spec.settings,
    }, ensure_ascii=False))
