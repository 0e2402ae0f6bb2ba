"""Property-based API tests from the app's OpenAPI schema (schemathesis): no generated request gets a 5xx.

Both schema-conforming (positive) and schema-violating (negative) requests, a bounded number of each.
"""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402

from service.app import create_app  # noqa: E402
from service.settings import ServiceSettings  # noqa: E402

EXAMPLES = 60


@pytest.fixture(scope="module")
def api_schema(forced_corrector):
    # small limits, so generated inputs also run into the 413 paths
    app = create_app(ServiceSettings(max_text_chars=200, max_texts=8, max_request_chars=400, max_body_bytes=4096,
                                     max_wait_ms=0), corrector=forced_corrector)
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def test_the_schema_lists_every_operation(api_schema):
    ops = {(op.method.upper(), op.path) for op in (r.ok() for r in api_schema.get_all_operations())}
    assert ops == {("POST", "/correct"), ("GET", "/health"), ("GET", "/ready"), ("GET", "/metrics")}


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_server_errors(api_schema, mode):
    statuses: list[int] = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        case = data.draw(api_schema.as_strategy(mode))
        response = case.call()
        statuses.append(response.status_code)
        assert response.status_code < 500, f"{case.method} {case.path} {case.body!r} -> " \
                                            f"{response.status_code}: {response.text[:300]}"
        case.validate_response(response, checks=[not_a_server_error])

    run()
    assert len(statuses) >= EXAMPLES // 2
    if mode is GenerationMode.POSITIVE:
        assert 200 in statuses
    else:
        assert any(400 <= s < 500 for s in statuses)
