"""Column values between each backend's form and the backup's neutral form."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from omoide.ops._codec import decoder, encoder, vector_b64, vector_from_b64
from omoide.ops.tables import Kind

KINDS = [Kind.TS, Kind.JSON, Kind.BOOL, Kind.VECTOR, Kind.UNITS]
NAMES = ["at", "meta", "flag", "vec", "units"]


def test_sqlite_values_round_trip_unchanged() -> None:
    vec = np.array([0.1, -2.5, 3.25], dtype="<f4").tobytes()
    row = ("2026-11-26T10:00:00.000001+00:00", '{"a": [1, "日本"]}', 1, vec, vec + vec)
    logical = decoder("sqlite", KINDS, NAMES)(row)
    assert logical["meta"] == {"a": [1, "日本"]} and logical["flag"] is True
    back = encoder("sqlite", KINDS, NAMES)(logical)
    assert back[0] == row[0] and back[2] == 1 and back[3] == vec and back[4] == vec + vec
    assert encoder("sqlite", KINDS, NAMES)(dict.fromkeys(NAMES)) == (None,) * 5


def test_postgres_takes_float16_and_aware_timestamps() -> None:
    values = encoder("postgresql", KINDS, NAMES)(
        {
            "at": "2026-11-26T10:00:00",  # no offset: UTC
            "meta": {"k": 1},
            "flag": False,
            "vec": vector_b64([0.1, 1.0]),
            "units": vector_b64([0.1, 1.0, 2.0, 3.0]),
        }
    )
    assert values[0] == datetime(2026, 11, 26, 10, tzinfo=UTC)
    assert values[1] == '{"k": 1}'
    assert np.array_equal(values[3].to_numpy(), np.array([0.1, 1.0], dtype=np.float16))
    assert np.frombuffer(values[4], dtype="<f2").tolist() == np.array([0.1, 1, 2, 3], dtype=np.float16).tolist()
    half = vector_from_b64(vector_b64(np.array([0.1, 1.0], dtype=np.float16).astype(np.float32)))
    assert half.tolist() == np.array([0.1, 1.0], dtype=np.float16).astype(np.float32).tolist()
