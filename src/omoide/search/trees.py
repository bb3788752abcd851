"""A small boosted-tree ranker evaluated with numpy (issue 16, direction 4).

The unit scorer's linear model cannot say "the line's own BM25 matters *when* its chunk is
far down the vector list"; a few dozen shallow regression trees can, and fitted on the dev
sets under the same cross-validation (``benchmarks/fit_units.py --model trees``, LightGBM's
LambdaMART) they rank better than the linear model on both languages (figures in
``docs/bench-notes/retrieval-quality.md``). LightGBM is needed to *fit* them only: the
fitted trees ship as data in ``unit_weights.json`` and are evaluated here, so the product
gains no dependency.

Evaluation follows QuickScorer (Lucchese et al., SIGIR 2015): with at most eight leaves a
tree, every internal node carries a bitmask of the leaves that stay reachable when its test
fails; AND-ing the masks of the failed tests leaves the exit leaf as the lowest set bit. The
AND depends only on *which* of a tree's (at most seven) tests failed, so it is done once per
tree and pattern when the model loads: :meth:`TreeEnsemble.predict` turns each row's failed
tests into one small integer per tree (bit ``j``: test ``j`` failed) and reads the exit leaf's
value from that table — a handful of whole-array numpy operations for all rows and all trees at
once (~0.2 ms of CPU for 300 units and 100 trees, half of AND-ing the masks per row; the scores
are the same to the last bit) instead of a walk per row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.errors import ConfigError

MAX_LEAVES = 8
"""Leaves per tree: one bit each in a ``uint8`` mask."""

_LOWEST_BIT = np.array([(b & -b).bit_length() - 1 if b else 0 for b in range(256)], dtype=np.intp)


@dataclass(frozen=True, slots=True)
class TreeEnsemble:
    """Boosted regression trees over the unit features, in QuickScorer form.

    Arrays are ``(trees, nodes)`` for ``features`` (column index), ``thresholds`` (a row goes
    left when ``x <= threshold``; padding nodes have ``+inf`` and never fail) and ``masks``
    (the leaves left when the test fails), and ``(trees, MAX_LEAVES)`` for ``values`` (leaves
    numbered left to right). The score is the sum of each tree's exit leaf."""

    features: npt.NDArray[np.intp]
    thresholds: npt.NDArray[np.float64]
    masks: npt.NDArray[np.uint8]
    values: npt.NDArray[np.float64]
    exits: npt.NDArray[np.float64] = field(init=False, repr=False, compare=False)
    """Flat ``(trees × 2 ** nodes)``: tree ``t``'s exit leaf value for the pattern ``p`` of
    failed tests (bit ``j``: node ``j`` failed) at ``t * 2 ** nodes + p``, built from the masks."""
    _bits: npt.NDArray[np.uint8] = field(init=False, repr=False, compare=False)  # 2 ** j per node
    _offsets: npt.NDArray[np.intp] = field(init=False, repr=False, compare=False)  # t * 2 ** nodes

    def __post_init__(self) -> None:
        trees, nodes = self.masks.shape
        object.__setattr__(self, "exits", _exit_table(self.masks, self.values).ravel())
        object.__setattr__(self, "_bits", (1 << np.arange(nodes)).astype(np.uint8))
        object.__setattr__(self, "_offsets", np.arange(trees, dtype=np.intp) << nodes)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], *, columns: int) -> TreeEnsemble:
        """Read the ``trees`` object of ``unit_weights.json`` (lists written by
        :meth:`to_json`); ``columns`` is the number of features the scorer computes.

        Raises:
            ConfigError: the arrays do not line up or name a feature that does not exist
                (a weights file from another omoide version: refit or reinstall).
        """
        try:
            features = np.asarray(raw["features"], dtype=np.intp)
            thresholds = np.asarray(
                [[np.inf if t is None else float(t) for t in row] for row in raw["thresholds"]], dtype=np.float64
            )
            masks = np.asarray(raw["masks"], dtype=np.uint8)
            values = np.asarray(raw["values"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"unit_weights.json: unreadable trees ({exc}); refit with benchmarks/fit_units.py"
            ) from exc
        trees = features.shape[0] if features.ndim == 2 else -1
        if (
            trees < 0
            or thresholds.shape != features.shape
            or masks.shape != features.shape
            or values.shape != (trees, MAX_LEAVES)
            or (features.size and (features.min() < 0 or features.max() >= columns))
        ):
            raise ConfigError(
                "unit_weights.json: the trees' arrays do not line up with the unit features; "
                "refit with benchmarks/fit_units.py --write"
            )
        return cls(features, thresholds, masks, values)

    @classmethod
    def from_lightgbm(cls, dump: Mapping[str, Any]) -> TreeEnsemble:
        """Pack a LightGBM model (``Booster.dump_model()``) with numerical ``<=`` splits and at
        most :data:`MAX_LEAVES` leaves a tree (what ``fit_units.py`` trains).

        Raises:
            ConfigError: a tree with more leaves or another kind of split.
        """
        feats: list[list[int]] = []
        thresholds: list[list[float]] = []
        masks: list[list[int]] = []
        values: list[list[float]] = []
        for info in dump["tree_info"]:
            f: list[int] = []
            t: list[float] = []
            m: list[int] = []
            v: list[float] = []

            def walk(
                node: Mapping[str, Any], f: list[int] = f, t: list[float] = t, m: list[int] = m, v: list[float] = v
            ) -> list[int]:
                if "split_index" not in node:
                    v.append(float(node["leaf_value"]))
                    return [len(v) - 1]
                if node.get("decision_type") != "<=":
                    raise ConfigError(f"unsupported split {node.get('decision_type')!r}: numerical <= splits only")
                at = len(f)
                f.append(int(node["split_feature"]))
                t.append(float(node["threshold"]))
                m.append(0)
                left = walk(node["left_child"])
                right = walk(node["right_child"])
                m[at] = 0xFF & ~sum(1 << leaf for leaf in left)
                return left + right

            walk(info["tree_structure"])
            if len(v) > MAX_LEAVES:
                raise ConfigError(f"a tree has {len(v)} leaves; at most {MAX_LEAVES} (num_leaves)")
            feats.append(f)
            thresholds.append(t)
            masks.append(m)
            values.append(v)
        return cls.pack(feats, thresholds, masks, values)

    @classmethod
    def pack(
        cls,
        features: Sequence[Sequence[int]],
        thresholds: Sequence[Sequence[float]],
        masks: Sequence[Sequence[int]],
        values: Sequence[Sequence[float]],
    ) -> TreeEnsemble:
        """Ragged per-tree lists → padded arrays (padding nodes never fail their test)."""
        trees = len(features)
        nodes = max([1, *(len(f) for f in features)])
        f_arr = np.zeros((trees, nodes), dtype=np.intp)
        t_arr = np.full((trees, nodes), np.inf)
        m_arr = np.full((trees, nodes), 0xFF, dtype=np.uint8)
        v_arr = np.zeros((trees, MAX_LEAVES))
        for i in range(trees):
            k = len(features[i])
            f_arr[i, :k] = features[i]
            t_arr[i, :k] = thresholds[i]
            m_arr[i, :k] = masks[i]
            v_arr[i, : len(values[i])] = values[i]
        return cls(f_arr, t_arr, m_arr, v_arr)

    def to_json(self, *, digits: int = 7) -> dict[str, Any]:
        """Lists for ``unit_weights.json`` (``None`` for a padding threshold)."""
        return {
            "features": self.features.tolist(),
            "thresholds": [
                [None if not np.isfinite(t) else float(f"{t:.{digits}g}") for t in row] for row in self.thresholds
            ],
            "masks": self.masks.tolist(),
            "values": [[float(f"{v:.{digits}g}") for v in row] for row in self.values],
        }

    def predict(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """The ensemble's score of each row of ``x`` (rows × features)."""
        if x.shape[0] == 0 or self.features.shape[0] == 0:
            return np.zeros(x.shape[0])
        failed = x[:, self.features] > self.thresholds  # rows × trees × nodes
        # rows × trees: the failed tests as bits (at most 7 nodes: fits a uint8), then each
        # tree's exit value, laid out tree by tree (Fortran order) so the sum over the trees
        # adds them in the same order as the masks' evaluation did: the same scores to the bit
        pattern = np.einsum("rtn,n->rt", failed.view(np.uint8), self._bits)
        exits = np.take(self.exits, (pattern + self._offsets).T).T
        out: npt.NDArray[np.float64] = exits.sum(axis=1)
        return out


def _exit_table(masks: npt.NDArray[np.uint8], values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Per tree and pattern of failed tests (bit ``j``: node ``j``), the exit leaf's value:
    the lowest leaf left by AND-ing the failed nodes' masks (a padding node never fails)."""
    trees, nodes = masks.shape
    if nodes > MAX_LEAVES - 1:  # a tree of at most MAX_LEAVES leaves has MAX_LEAVES - 1 tests
        raise ConfigError(f"trees with {nodes} tests: at most {MAX_LEAVES - 1} ({MAX_LEAVES} leaves)")
    patterns = np.arange(1 << nodes)
    bits = (patterns[:, None] >> np.arange(nodes)) & 1  # patterns × nodes
    reach = np.full((trees, patterns.shape[0]), 0xFF, dtype=np.uint8)
    for j in range(nodes):
        reach = np.where(bits[:, j].astype(bool), reach & masks[:, j, None], reach)
    table: npt.NDArray[np.float64] = values[np.arange(trees)[:, None], _LOWEST_BIT[reach]]
    return table


__all__ = ["MAX_LEAVES", "TreeEnsemble"]
