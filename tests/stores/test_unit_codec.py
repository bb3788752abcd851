"""The stored form of per-line vectors (:mod:`omoide.stores.unit_codec`): int8 with a scale per line."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from omoide.stores.unit_codec import MAGIC, decode_matrix, encode_matrix, stored_width

F16 = np.dtype("<f2")
F32 = np.dtype("<f4")

finite = st.floats(-65504, 65504, allow_nan=False, width=32)
matrices = hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=40), elements=finite)


@settings(max_examples=300, deadline=None)
@given(matrices, st.sampled_from([1, 4, 1024]))
def test_each_value_reads_back_within_half_a_step_of_its_line(matrix: np.ndarray, multiple: int) -> None:
    data = encode_matrix(matrix, multiple=multiple)
    assert data is not None and len(data) % multiple == 0 and data[:4] == MAGIC
    got = decode_matrix(data, matrix.shape[1], legacy=F16)
    assert got is not None and got.dtype == np.float32 and got.shape == matrix.shape
    step = np.abs(matrix.astype(np.float64)).max(axis=1, keepdims=True) / 127
    assert np.all(np.abs(got - matrix) <= step / 2 * (1 + 1e-5) + 1e-30)
    # stored again (a backup restored), it is the same bytes: restores never drift
    assert encode_matrix(got, multiple=multiple) == data


def test_the_layout_is_a_header_the_scales_and_the_values() -> None:
    matrix = np.array([[1.0, -0.5, 0.0], [0.0, 0.0, 0.0]], dtype=np.float32)
    data = encode_matrix(matrix)
    assert data is not None and len(data) == 12 + 2 * 4 + 2 * 3
    assert data[:4] == MAGIC and int.from_bytes(data[4:8], "little") == 2 and int.from_bytes(data[8:12], "little") == 3
    assert np.frombuffer(data, dtype="<f4", count=2, offset=12).tolist() == [pytest.approx(1 / 127), 0.0]
    assert np.frombuffer(data, dtype=np.int8, offset=20).tolist() == [127, -64, 0, 0, 0, 0]  # a line of zeros
    assert stored_width(data) == 3 and stored_width(matrix.tobytes()) is None
    got = decode_matrix(data, 3, legacy=F32)
    assert got is not None and got[1].tolist() == [0.0, 0.0, 0.0]
    got[0, 0] = 5.0  # a writable copy
    assert decode_matrix(data, 3, legacy=F32)[0, 0] == 1.0  # type: ignore[index]


@pytest.mark.parametrize("legacy", [F16, F32])
def test_rows_written_before_the_int8_form_read_as_they_were(legacy: np.dtype) -> None:
    """A float16 / float32 matrix of finite values never starts with MAGIC (a NaN), even one whose
    length fits the int8 form's."""
    matrix = np.array([[0.0, 0.0, 0.25, 1.5, -2.0, 3.0, 0.0, 1.0]], dtype=np.float32)
    got = decode_matrix(matrix.astype(legacy).tobytes(), 8, legacy=legacy)
    assert got is not None and got.tolist() == matrix.tolist()
    assert decode_matrix(matrix.astype(legacy).tobytes()[:-1], 8, legacy=legacy) is None  # not whole rows


def test_what_is_not_a_whole_matrix_of_that_width_reads_as_none() -> None:
    data = encode_matrix(np.ones((3, 4), dtype=np.float32))
    assert data is not None
    assert decode_matrix(None, 4, legacy=F16) is None and decode_matrix(b"", 4, legacy=F16) is None
    assert decode_matrix(data, None, legacy=F16) is None
    assert decode_matrix(data, 5, legacy=F16) is None  # written 4 wide
    assert decode_matrix(data[:-1], 4, legacy=F16) is None  # cut short
    assert decode_matrix(data[:10], 4, legacy=F16) is None  # a header cut short
    assert decode_matrix(MAGIC + bytes(8), 4, legacy=F16) is None  # no lines
    assert encode_matrix(None) is None
    with pytest.raises(ValueError, match="2-D"):
        encode_matrix(np.ones(4, dtype=np.float32))
