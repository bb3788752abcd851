"""GET /v1/export and /v1/users/{id}/export when the database refuses the export's queries."""

from __future__ import annotations

import json

import pytest

from .test_errors import _is_problem


@pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
async def test_an_export_whose_first_query_fails_is_a_problem_not_a_cut_off_body(client, tenants):
    """PostgreSQL refuses a NUL in a query parameter. The export answered 200 with its header line
    and then broke off (uvicorn: 'response already started'), though it promised a problem answer
    for a database error: it read only the header, which needs no query, before answering."""
    response = await client.get("/v1/users/a%00b/export", headers=tenants.ha)
    _is_problem(response, 400, "INVALID_CONTENT")
    fine = await client.get("/v1/users/7/export", headers=tenants.ha)
    assert fine.status_code == 200 and json.loads(fine.text.splitlines()[0])["user"] == "7"
