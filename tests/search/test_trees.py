"""The boosted-tree evaluator (omoide.search.trees): QuickScorer masks give each tree's exit
leaf exactly as a walk from the root does; LightGBM dumps and the JSON form round-trip; the
shipped models load and score."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from omoide.errors import ConfigError
from omoide.search.trees import MAX_LEAVES, TreeEnsemble
from omoide.search.units import FEATURES, UnitWeights, shipped_weights


def leaf(value: float) -> dict[str, Any]:
    return {"leaf_value": value}


def split(feature: int, threshold: float, left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    return {
        "split_index": 0,
        "split_feature": feature,
        "threshold": threshold,
        "decision_type": "<=",
        "left_child": left,
        "right_child": right,
    }


def walk(node: dict[str, Any], row: np.ndarray) -> float:
    """The reference: follow the tests from the root."""
    while "split_index" in node:
        node = node["left_child"] if row[node["split_feature"]] <= node["threshold"] else node["right_child"]
    return float(node["leaf_value"])


def random_tree(rng: random.Random, columns: int, leaves: int) -> dict[str, Any]:
    """A random binary tree with ``leaves`` leaves (unbalanced shapes included)."""
    if leaves == 1:
        return leaf(rng.uniform(-1, 1))
    left = rng.randint(1, leaves - 1)
    return split(
        rng.randrange(columns),
        rng.uniform(-1, 1),
        random_tree(rng, columns, left),
        random_tree(rng, columns, leaves - left),
    )


def test_masks_give_the_leaf_a_walk_reaches() -> None:
    rng = random.Random(7)
    columns = 5
    trees = [random_tree(rng, columns, rng.randint(1, MAX_LEAVES)) for _ in range(40)]
    ensemble = TreeEnsemble.from_lightgbm({"tree_info": [{"tree_structure": t} for t in trees]})
    x = np.array([[rng.uniform(-1.2, 1.2) for _ in range(columns)] for _ in range(300)])
    expected = np.array([sum(walk(t, row) for t in trees) for row in x])
    np.testing.assert_allclose(ensemble.predict(x), expected, rtol=0, atol=1e-12)


def masks_reference(ensemble: TreeEnsemble, x: np.ndarray) -> np.ndarray:
    """QuickScorer evaluated row by row and tree by tree: AND the masks of the failed tests, take
    the lowest leaf left (how ``predict`` worked before its exit table)."""
    failed = x[:, ensemble.features] > ensemble.thresholds
    reach = np.bitwise_and.reduce(np.where(failed, ensemble.masks, np.uint8(0xFF)), axis=2)
    lowest = np.array([(b & -b).bit_length() - 1 if b else 0 for b in range(256)])
    exits = ensemble.values[np.arange(ensemble.values.shape[0]), lowest[reach]]
    out: np.ndarray = exits.sum(axis=1)
    return out


@pytest.mark.parametrize("rows", [1, 2, 9, 300])
def test_the_exit_table_scores_as_the_masks_do_to_the_bit(rows: int) -> None:
    """The search's unit order depends on exact scores (ties included): the table must give the
    same sums, not merely close ones, for any number of rows."""
    rng = random.Random(rows)
    trees = [random_tree(rng, 6, rng.randint(1, MAX_LEAVES)) for _ in range(60)]
    ensemble = TreeEnsemble.from_lightgbm({"tree_info": [{"tree_structure": t} for t in trees]})
    x = np.random.default_rng(rows).uniform(-1.2, 1.2, size=(rows, 6))
    x[np.random.default_rng(rows + 1).random(x.shape) < 0.2] = 0.0
    np.testing.assert_array_equal(ensemble.predict(x), masks_reference(ensemble, x))
    for modes in shipped_weights().values():
        for model in modes.values():
            if model.trees is not None:
                wide = np.random.default_rng(rows).uniform(-1, 1, size=(rows, len(FEATURES)))
                np.testing.assert_array_equal(model.trees.predict(wide), masks_reference(model.trees, wide))


def test_a_row_on_the_threshold_goes_left() -> None:
    ensemble = TreeEnsemble.from_lightgbm({"tree_info": [{"tree_structure": split(0, 0.5, leaf(1.0), leaf(2.0))}]})
    assert ensemble.predict(np.array([[0.5], [0.50001], [-3.0]])).tolist() == [1.0, 2.0, 1.0]


def test_json_round_trip_keeps_the_scores() -> None:
    rng = random.Random(3)
    trees = [random_tree(rng, 4, rng.randint(1, MAX_LEAVES)) for _ in range(10)]
    ensemble = TreeEnsemble.from_lightgbm({"tree_info": [{"tree_structure": t} for t in trees]})
    again = TreeEnsemble.from_json(ensemble.to_json(digits=17), columns=4)
    x = np.random.default_rng(1).uniform(-1, 1, size=(50, 4))
    np.testing.assert_array_equal(again.predict(x), ensemble.predict(x))


def test_empty_input_and_empty_ensemble() -> None:
    ensemble = TreeEnsemble.from_lightgbm({"tree_info": [{"tree_structure": split(0, 0.0, leaf(1.0), leaf(2.0))}]})
    assert ensemble.predict(np.zeros((0, 1))).shape == (0,)
    empty = TreeEnsemble.pack([], [], [], [])
    assert empty.predict(np.zeros((3, 2))).tolist() == [0.0, 0.0, 0.0]


def test_too_many_leaves_or_other_splits_are_refused() -> None:
    rng = random.Random(1)
    with pytest.raises(ConfigError, match="leaves"):
        TreeEnsemble.from_lightgbm({"tree_info": [{"tree_structure": random_tree(rng, 3, MAX_LEAVES + 1)}]})
    categorical = split(0, 1.0, leaf(0.0), leaf(1.0)) | {"decision_type": "=="}
    with pytest.raises(ConfigError, match="split"):
        TreeEnsemble.from_lightgbm({"tree_info": [{"tree_structure": categorical}]})


def test_arrays_that_do_not_line_up_are_refused() -> None:
    good = TreeEnsemble.from_lightgbm({"tree_info": [{"tree_structure": split(2, 0.0, leaf(1.0), leaf(2.0))}]})
    raw = good.to_json()
    with pytest.raises(ConfigError, match="line up"):
        TreeEnsemble.from_json(raw, columns=2)  # feature 2 does not exist
    with pytest.raises(ConfigError, match="line up"):
        TreeEnsemble.from_json({**raw, "values": [[1.0, 2.0]]}, columns=3)
    with pytest.raises(ConfigError, match="unreadable"):
        TreeEnsemble.from_json({"features": [[0]]}, columns=3)


def test_unit_weights_add_trees_to_the_linear_part() -> None:
    trees = TreeEnsemble.from_lightgbm(
        {"tree_info": [{"tree_structure": split(FEATURES.index("speaker"), 0.5, leaf(0.0), leaf(3.0))}]}
    )
    x = np.zeros((2, len(FEATURES)))
    x[1, FEATURES.index("speaker")] = 1.0
    x[:, FEATURES.index("length")] = 2.0
    model = UnitWeights({"length": 0.5}, bias=1.0, trees=trees)
    assert model.score(x).tolist() == [2.0, 5.0]
    assert UnitWeights({"length": 0.5}, bias=1.0).score(x).tolist() == [2.0, 2.0]


def test_shipped_models_score_finite_values() -> None:
    x = np.random.default_rng(0).uniform(0, 1, size=(20, len(FEATURES)))
    for language, modes in shipped_weights().items():
        for mode, model in modes.items():
            assert np.isfinite(model.score(x)).all(), (language, mode)
