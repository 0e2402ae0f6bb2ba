"""The HTTP service in process (TestClient): every route, what /correct answers and the settings a request
passes on, the demo page and the offline API docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from service_calls import JSON, check_contract, post

from service.app import ModelLoadError, create_app
from service.settings import ServiceSettings

STATIC = Path(__file__).resolve().parents[1] / "service" / "static"


def test_health(client):
    r = client.get("/health")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_ready_is_503_before_the_model_is_loaded_and_after_shutdown(tiny_bundle):
    app = create_app(ServiceSettings(model_dir=tiny_bundle))
    outside = TestClient(app)  # no `with`: the lifespan has not run
    r = outside.get("/ready")
    assert r.status_code == 503 and r.json()["status"] == "not ready"
    assert outside.get("/health").status_code == 200
    status, body = post(outside, {"text": "今天"})
    assert status == 503 and "not loaded" in body["detail"]
    with TestClient(app) as c:
        r = c.get("/ready")
        assert r.status_code == 200
        assert r.json() == {"status": "ready", "model": "tiny", "version": r.json()["version"],
                            "provider": "CPUExecutionProvider", "precision": "fp32"}
    assert outside.get("/ready").status_code == 503


def test_a_bad_bundle_stops_startup(tmp_path):
    with pytest.raises(ModelLoadError, match="cannot load the model"), \
            TestClient(create_app(ServiceSettings(model_dir=tmp_path / "missing"))):
        pass


def test_correct_one_text(forced_client, forced_corrector):
    status, body = post(forced_client, {"text": "今天天汽很好"})
    assert status == 200
    assert body["model"] == forced_corrector.name and body["version"] == forced_corrector.version
    [result] = body["results"]
    check_contract(result, "今天天汽很好")
    assert result == forced_corrector.correct("今天天汽很好").to_dict() and result["edits"]


def test_correct_several_texts_in_order(forced_client, forced_corrector):
    texts = ["今天天汽很好", "", "hello 未来", "他已经知道自己错了。"]
    status, body = post(forced_client, {"texts": texts})
    assert status == 200
    assert body["results"] == [c.to_dict() for c in forced_corrector.correct_batch(texts)]


def test_request_options_reach_the_corrector(forced_client):
    text = "今天天汽很好。我们去公园散步吧。"
    _, full = post(forced_client, {"text": text})
    assert len(full["results"][0]["edits"]) > 4
    _, none = post(forced_client, {"text": text, "threshold": 1.0})
    assert none["results"][0]["edits"] == []
    _, limited = post(forced_client, {"text": text, "max_edits": 1})
    assert len(limited["results"][0]["edits"]) == 2  # one per sentence
    _, protected = post(forced_client, {"text": text, "protect": ["天汽", "公园"]})
    assert {2, 3, 10, 11}.isdisjoint(e["position"] for e in protected["results"][0]["edits"])


def test_every_decoding_setting_can_be_sent_per_request(forced_client, tiny_bundle):
    """Each CorrectorConfig field but the resource one (batch_size) is a request field, and reaches the model."""
    from dataclasses import fields

    from conftest import FORCE_EDITS

    from corrector import Corrector, CorrectorConfig
    from service.schemas import DecodingSettings

    assert set(DecodingSettings.model_fields) == {f.name for f in fields(CorrectorConfig)} - {"batch_size"}
    text = "今天天汽很好。我们去公园散步吧。"
    settings = {"use_lm": False, "top_k": 3, "shortlist": 2, "confusions": [["汽", "气"]],
                "protect_dictionary_words": True, "protect_foreign_names": 0.01,
                "protect_regional_forms": False}
    status, body = post(forced_client, {"text": text, **settings})
    assert status == 200
    want = Corrector.load(tiny_bundle, device="cpu", **{**FORCE_EDITS, **settings}).correct(text)
    assert body["results"][0] == want.to_dict()
    assert body["results"][0] != post(forced_client, {"text": text})[1]["results"][0]


def test_empty_inputs(client):
    status, body = post(client, {"text": ""})
    assert status == 200 and body["results"] == [{"source": "", "target": "", "edits": []}]
    status, body = post(client, {"texts": []})
    assert status == 200 and body["results"] == []


def test_demo_page_is_served_without_external_resources(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert 'id="input"' in r.text and 'id="correct"' in r.text and "/static/app.js" in r.text
    for name in ("app.js", "style.css"):
        asset = client.get(f"/static/{name}")
        assert asset.status_code == 200 and asset.text == (STATIC / name).read_text(encoding="utf-8")
    for f in STATIC.iterdir():
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", f.read_text(encoding="utf-8")), f.name


def test_openapi_and_docs(client):
    schema = client.get("/openapi.json").json()
    assert {"/correct", "/health", "/ready", "/metrics"} <= set(schema["paths"])
    assert client.get("/docs").status_code == 200


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_every_asset_from_this_server(client, page):
    """Swagger UI and Redoc render offline: every script, style sheet and icon (and no web font) is served
    here, from the fastapi-offline package."""
    html = client.get(page).text
    assert not re.search(r"https?://", html), "the page loads something from another host"
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(a.endswith(".js") for a in assets)
    for asset in assets:
        r = client.get(asset)
        assert asset.startswith("/") and r.status_code == 200 and len(r.content) > 100, asset
        if asset.endswith(".js"):
            assert "fonts.googleapis.com" not in r.text


@pytest.mark.parametrize("path", ["/", "/health", "/ready"])
def test_head_is_answered_like_get(client, path):
    head, get = client.head(path), client.get(path)
    assert head.status_code == get.status_code == 200
    assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]


@pytest.mark.parametrize("path", ["/correct/", "/health/", "/ready/"])
def test_no_redirect_to_a_host_the_client_names(client, path):
    method = "POST" if path.startswith("/correct") else "GET"
    r = client.request(method, path, content=b'{"text": "a"}', follow_redirects=False,
                       headers={**JSON, "host": "evil.example"})
    assert r.status_code == 404 and "location" not in r.headers and r.json() == {"detail": "Not Found"}
