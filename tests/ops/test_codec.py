"""Column values between each backend's form and the backup's neutral form."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from omoide.ops._codec import decoder, encoder, vector_b64, vector_from_b64
from omoide.ops.tables import Kind
from omoide.stores.unit_codec import MAGIC, decode_matrix, encode_matrix
from stored_vectors import exact

KINDS = [Kind.TS, Kind.JSON, Kind.BOOL, Kind.VECTOR, Kind.UNITS, Kind.INT]
NAMES = ["at", "meta", "flag", "vec", "units", "dimensions"]


def test_sqlite_values_round_trip_unchanged() -> None:
    vec = np.array([0.1, -2.5, 3.25], dtype="<f4").tobytes()
    units = encode_matrix(exact((2, 3), 0), multiple=4 * 3)
    row = ("2026-11-26T10:00:00.000001+00:00", '{"a": [1, "日本"]}', 1, vec, units, 3)
    logical = decoder("sqlite", KINDS, NAMES)(row)
    assert logical["meta"] == {"a": [1, "日本"]} and logical["flag"] is True
    assert vector_from_b64(logical["units"]).tolist() == exact((2, 3), 0).ravel().tolist()
    back = encoder("sqlite", KINDS, NAMES)(logical)
    assert back[0] == row[0] and back[2] == 1 and back[3] == vec and back[4] == units
    assert encoder("sqlite", KINDS, NAMES)(dict.fromkeys(NAMES)) == (None,) * 6


def test_unit_vectors_written_before_the_int8_form_are_backed_up_and_restored_in_it() -> None:
    units = exact((2, 3), 1)
    for backend, legacy in (("sqlite", "<f4"), ("postgresql", "<f2")):
        row = (None, None, None, None, units.astype(legacy).tobytes(), 3)
        logical = decoder(backend, KINDS, NAMES)(row)
        assert vector_from_b64(logical["units"]).tolist() == units.ravel().tolist()
        stored = encoder(backend, KINDS, NAMES)(logical)[4]
        assert stored[:4] == MAGIC
        assert decode_matrix(stored, 3, legacy=np.dtype(legacy)).tolist() == units.tolist()


def test_postgres_takes_float16_and_aware_timestamps() -> None:
    values = encoder("postgresql", KINDS, NAMES)(
        {
            "at": "2026-11-26T10:00:00",  # no offset: UTC
            "meta": {"k": 1},
            "flag": False,
            "vec": vector_b64([0.1, 1.0]),
            "units": vector_b64([0.1, 1.0, 2.0, 3.0]),
            "dimensions": 2,
        }
    )
    assert values[0] == datetime(2026, 11, 26, 10, tzinfo=UTC)
    assert values[1] == '{"k": 1}'
    assert np.array_equal(values[3].to_numpy(), np.array([0.1, 1.0], dtype=np.float16))
    units = decode_matrix(values[4], 2, legacy=np.dtype("<f2"))  # int8 with a scale per line
    assert units is not None
    np.testing.assert_allclose(units, [[0.1, 1.0], [2.0, 3.0]], atol=3.0 / 254)
    half = vector_from_b64(vector_b64(np.array([0.1, 1.0], dtype=np.float16).astype(np.float32)))
    assert half.tolist() == np.array([0.1, 1.0], dtype=np.float16).astype(np.float32).tolist()
