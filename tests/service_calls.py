"""What the HTTP service's test files (tests/test_service_*.py) share: posting a body to /correct and the output
contract of a result. Their TestClient fixtures (``client``: the tiny bundle through the real lifespan;
``forced_client``: a model that edits every in-vocabulary character) are in conftest."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from corrector.text.chars import is_cjk

JSON = {"content-type": "application/json"}


def post(c: TestClient, body: object) -> tuple[int, dict]:
    r = c.post("/correct", content=json.dumps(body), headers=JSON)
    assert r.headers["content-type"].startswith("application/json")
    return r.status_code, r.json()


def check_contract(result: dict, text: str) -> None:
    """Same length; only edited positions change; every non-Chinese character kept as it was."""
    assert result["source"] == text and len(result["target"]) == len(text)
    changed = [i for i, (a, b) in enumerate(zip(text, result["target"])) if a != b]
    assert changed == [e["position"] for e in result["edits"]]
    for e in result["edits"]:
        assert text[e["position"]] == e["source"] and result["target"][e["position"]] == e["target"]
        assert 0.0 <= e["confidence"] <= 1.0 and e["reason"] in ("pinyin", "shape", "other")
    assert all(a == b for a, b in zip(text, result["target"]) if not is_cjk(a))
