"""``--server URL``: the corrector's pass through a running service (``POST /correct``), so that a hook need not
load the model. Texts go in requests within the service's default limits; a 503 is retried after its Retry-After."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from corrector.evidence.terms import OWN

from .check import Correct, EditRow

MAX_TEXTS = 64
MAX_CHARS = 90_000
MAX_LIST = 1000  # words of a request's word list (the service's limit)
RETRIES = 5


class RemoteError(Exception):
    pass


def remote_pass(url: str) -> Correct:
    endpoint = url.rstrip("/") + "/correct"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def post(texts: list[str], settings: dict[str, Any]) -> list[Any]:
        body = json.dumps({"texts": texts, **settings}, ensure_ascii=False).encode()
        for attempt in range(RETRIES):
            request = urllib.request.Request(endpoint, body, {"Content-Type": "application/json"})
            try:
                with opener.open(request, timeout=120) as r:
                    return json.loads(r.read())["results"]
            except urllib.error.HTTPError as e:
                detail = e.read().decode(errors="replace")[:300]
                if e.code == 503 and attempt + 1 < RETRIES:
                    time.sleep(min(30.0, float(e.headers.get("Retry-After") or 1)))
                    continue
                raise RemoteError(f"{endpoint}: HTTP {e.code}: {detail}") from None
            except (urllib.error.URLError, OSError, ValueError) as e:
                raise RemoteError(f"{endpoint}: {getattr(e, 'reason', e)}") from None
        raise RemoteError(f"{endpoint}: still busy after {RETRIES} tries")

    def run(texts: list[str], settings: dict[str, Any]) -> list[list[EditRow]]:
        out: list[list[EditRow]] = []
        i = 0
        while i < len(texts):
            part: list[str] = []
            size = 0
            while i < len(texts) and len(part) < MAX_TEXTS and (not part or size + len(texts[i]) <= MAX_CHARS):
                part.append(texts[i])
                size += len(texts[i])
                i += 1
            while len(part) > 1 and _most_written(part, settings) > MAX_LIST:  # fewer texts, fewer of the terms
                back = len(part) // 2
                part, i = part[:-back], i - back
            for result in post(part, _for(part, settings)):
                out.append([(e["position"], e["source"], e["target"], e["confidence"], e["reason"], ())
                            for e in result["edits"]])
        return out
    return run


OWN_LISTS = tuple(OWN)  # the tree's own lists (check.py), sent as far as a request's texts write them


def _written(texts: list[str], settings: dict[str, Any]) -> dict[str, list[str]]:
    """Of each of the tree's own lists (``OWN_LISTS`` in ``settings``), the words ``texts`` write."""
    joined = "\n".join(texts)
    return {name: [w for w in settings.get(name) or () if w in joined] for name in OWN_LISTS}


def _most_written(texts: list[str], settings: dict[str, Any]) -> int:
    return max(map(len, _written(texts, settings).values()))


def _for(texts: list[str], settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` for a request of ``texts``: of the tree's terms and bigrams, those the texts write (the others
    keep nothing in them), so that a request's lists stay within the service's limit."""
    if not any(settings.get(name) for name in OWN_LISTS):
        return settings
    out = {k: v for k, v in settings.items() if k not in OWN_LISTS}
    for name, written in _written(texts, settings).items():
        if len(written) > MAX_LIST:
            raise RemoteError(f"one text writes {len(written)} of the files' {name}, more than the service takes in "
                              f"a request ({MAX_LIST}): check it without --server, or set {name} = 0")
        if written:
            out[name] = written
    return out
