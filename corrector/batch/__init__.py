"""``python -m corrector batch``: correct a corpus into ordered, resumable output shards.

    inputs.py    find the input files, cut them into shards, read one shard's records
    shards.py    the output directory: atomic shard files, resume state, errors.jsonl, summary.json
    engines.py   records -> corrected rows with one Corrector (shared by both engines)
    local.py     --engine local: one process, the Corrector's own batching
    on_ray.py    --engine ray: Ray Data, one Corrector per actor (needs the 'distributed' extra)
    command.py   the argument parser and the job

Nothing here imports Ray or pyarrow at import time; they load only on the Ray and Parquet paths.
"""
