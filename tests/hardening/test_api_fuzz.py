"""Schemathesis over every operation of the OpenAPI schema, against the live app: no response
is a server error and every documented response matches the schema. Bounded and derandomized
(a fixed number of examples per operation and generation mode) so CI stays fast and repeatable.
"""

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from tests.factories import make_evaluation, make_registry, make_run, make_superuser, make_token

pytestmark = pytest.mark.django_db(transaction=True)
EXAMPLES = int(os.environ.get("ARENA_FUZZ_EXAMPLES", "20"))
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
OPERATIONS = 19  # documented when this was written; every one found is fuzzed


@pytest.fixture
def live_api(live_server, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.ARENA_UPLOAD_RATE = settings.ARENA_REEVALUATE_RATE = None
    registry = make_registry()
    make_evaluation(make_run(hardware=registry["hardware"]))
    token = make_token(make_superuser())
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/schema/")
    return schema, {"Authorization": f"Token {token}"}


def fuzz(operation, mode: GenerationMode, headers: dict) -> bool:
    """False when the operation takes no input that could be made invalid."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def call(case):
        case.call_and_validate(headers=headers, checks=CHECKS, timeout=30)

    try:
        call()
    except Unsatisfiable:
        if mode is GenerationMode.POSITIVE:
            raise
        return False
    return True


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_operation_answers_within_its_schema(live_api, mode):
    schema, headers = live_api
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= OPERATIONS
    fuzzed = [operation.label for operation in operations if fuzz(operation, mode, headers)]
    assert len(fuzzed) >= (len(operations) if mode is GenerationMode.POSITIVE else 8), fuzzed
