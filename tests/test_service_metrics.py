"""The HTTP service's Prometheus metrics (TestClient): requests, latency, batches and errors counted under
bounded labels, in a registry of each app's own."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from service_calls import JSON, post

from service.app import create_app
from service.settings import ServiceSettings


def test_metrics_count_requests_latency_batches_and_errors(tiny_bundle):
    with TestClient(create_app(ServiceSettings(model_dir=tiny_bundle))) as c:
        for _ in range(3):
            post(c, {"texts": ["今天天汽很好", "好"]})
        post(c, {"text": 1})
        c.get("/nowhere")
        r = c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'csc_http_requests_total{method="POST",route="/correct",status="200"} 3.0' in text
    assert 'csc_http_requests_total{method="POST",route="/correct",status="422"} 1.0' in text
    assert 'csc_http_requests_total{method="GET",route="unmatched",status="404"} 1.0' in text
    assert 'csc_http_errors_total{kind="validation",route="/correct"} 1.0' in text
    assert 'csc_http_request_duration_seconds_count{route="/correct"} 4.0' in text
    assert "csc_batch_size_count 3.0" in text and "csc_batch_size_sum 6.0" in text
    assert "csc_model_seconds_count 3.0" in text  # the model's time per unit
    assert "csc_queue_depth 0.0" in text  # nothing waits now
    assert float(re.search(r"^csc_cost_chars_per_second (\S+)$", text, re.M).group(1)) > 0
    assert re.search(r'csc_model_info\{name="tiny",precision="fp32",provider="CPUExecutionProvider",version="[^"]+"\} 1.0', text)
    assert "csc_texts_total 6.0" in text


def test_errors_answered_before_routing_count_under_their_route(forced_corrector):
    """Before: with FastAPI 0.165 the middleware's known paths missed every included route, and a 413 or 415
    on /correct counted as route="unmatched" (issue 37, 6)."""
    limits = ServiceSettings(max_body_bytes=100, cost_chars_per_s=1e6)
    with TestClient(create_app(limits, corrector=forced_corrector)) as c:
        assert c.post("/correct", content=b"x" * 200, headers=JSON).status_code == 413
        assert c.post("/correct", content=b'{"text": "a"}', headers={"content-type": "text/plain"}).status_code == 415
        text = c.get("/metrics").text
    assert 'csc_http_requests_total{method="POST",route="/correct",status="413"} 1.0' in text
    assert 'csc_http_requests_total{method="POST",route="/correct",status="415"} 1.0' in text
    assert "unmatched" not in text


def test_metrics_labels_stay_bounded(forced_corrector):
    """Invented methods and paths all land under one label each; the docs routes count as themselves."""
    app = create_app(ServiceSettings(), corrector=forced_corrector)
    with TestClient(app) as c:
        for path in ("/docs", "/redoc", "/openapi.json", "/static-offline-docs/redoc.standalone.js"):
            assert c.get(path).status_code == 200
        c.get("/metrics")  # its own labels appear from the next scrape on
        sizes = []
        for round_ in range(2):  # the first round adds its label values once; the second adds none
            for i in range(100):
                c.request(f"M{round_}{i:03d}", f"/x{round_}/{i}")
                c.request(f"N{round_}{i:03d}", "/correct")
            sizes.append(len(c.get("/metrics").text))
        text = c.get("/metrics").text
    assert sizes[1] - sizes[0] < 100, f"/metrics grew by {sizes[1] - sizes[0]} bytes with new methods and paths"
    assert 'csc_http_requests_total{method="other",route="unmatched",status="404"} 200.0' in text
    assert 'method="other",route="/correct",status="405"} 200.0' in text
    for route in ("/docs", "/redoc", "/openapi.json", "/static-offline-docs"):
        assert f'csc_http_requests_total{{method="GET",route="{route}",status="200"}} 1.0' in text, route
    assert "M000" not in text and "/x1" not in text


def test_each_app_has_its_own_metrics_registry(tiny_bundle):
    a, b = (create_app(ServiceSettings(model_dir=tiny_bundle)) for _ in range(2))
    TestClient(a).get("/health")
    count = 'csc_http_requests_total{method="GET",route="/health",status="200"}'
    assert f"{count} 1.0" in TestClient(a).get("/metrics").text
    assert count not in TestClient(b).get("/metrics").text
