"""Test vectors that every stored form of omoide holds exactly, so what a store reads back equals
what was written: whole multiples of 1/64 up to ±127/64, each row reaching 127/64 — exact in
float16 (PostgreSQL's ``halfvec``, rows written before the int8 form) and in the int8 form with
a scale per line (:mod:`omoide.stores.unit_codec`: the scale is then exactly 1/64)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def exact(shape: tuple[int, ...], seed: int) -> npt.NDArray[np.float32]:
    """A random float32 array of ``shape`` (1-D: one row) that every stored form reads back equal."""
    rng = np.random.default_rng(seed)
    steps = np.clip(np.rint(rng.standard_normal(shape) * 40.0), -127, 127)
    rows = steps.reshape(-1, shape[-1])
    rows[np.arange(rows.shape[0]), rng.integers(0, shape[-1], rows.shape[0])] = 127.0
    return (steps / 64.0).astype(np.float32)
