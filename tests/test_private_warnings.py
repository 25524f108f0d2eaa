"""Whether a warning appears must not depend on the private data (issue 24, item 3).

A warning that appears exactly when some record is out of bounds, holds a suppressed category,
gives a non-finite gradient, or when ``delta >= 1/n`` for the private ``n``, is itself a
private bit on stderr. The rule (:func:`jdp.verbosity.warn_private`): such a warning is shown
only under :func:`jdp.verbosity.show_private_details` (``jdp fit --verbose``, the data holder's
own terminal). Each test compares a table with its add/remove neighbour: by default both give
the same warnings (none); with private details shown the warning appears.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from accounting import PrivacyBudget, PrivacyLedger
from jdp.data.dp_schema import SchemaRelease
from jdp.data.schema import ClipWarning, Column, Schema, SuppressedCategoryWarning
from jdp.synth import base
from jdp.synth.signal import NoSignalWarning
from jdp.verbosity import show_private_details, warn_private

N = 20  # rows of the smaller neighbour
SCHEMA = Schema(
    columns=(
        Column(name="x", kind="continuous", lower=0, upper=1),
        Column(name="c", kind="categorical", categories=("a", "b")),
    )
)
FRAME = pd.DataFrame({"x": np.linspace(0, 1, N), "c": ["a", "b"] * (N // 2)})


def _warnings(fn: Callable[[], object]) -> list[tuple[type[Warning], str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in caught]


def _categories(fn: Callable[[], object]) -> list[type[Warning]]:
    return [category for category, _ in _warnings(fn)]


def _plus(frame: pd.DataFrame, **record: object) -> pd.DataFrame:
    """``frame`` with one more record (its add/remove neighbour)."""
    return pd.concat([frame, pd.DataFrame({k: [v] for k, v in record.items()})], ignore_index=True)


def test_warn_private_is_silent_unless_private_details_are_shown():
    assert _warnings(lambda: warn_private("secret", ClipWarning)) == []
    with show_private_details():
        assert _warnings(lambda: warn_private("secret", ClipWarning)) == [(ClipWarning, "secret")]
    with show_private_details(False):
        assert _warnings(lambda: warn_private("secret", ClipWarning)) == []


def test_clip_warning_appears_only_under_private_details():
    """A record out of the declared bounds (and its neighbour without it): same warnings."""
    neighbour = _plus(FRAME, x=5.0, c="a")
    assert _warnings(lambda: SCHEMA.conform(FRAME)) == []
    assert _warnings(lambda: SCHEMA.conform(neighbour)) == []
    assert SCHEMA.conform(neighbour).clip_counts == {"x": 1}  # still kept for the data holder
    with show_private_details():
        assert _categories(lambda: SCHEMA.conform(FRAME)) == []
        shown = _warnings(lambda: SCHEMA.conform(neighbour))
    assert [c for c, _ in shown] == [ClipWarning] and "1 value(s) of column 'x'" in shown[0][1]


def test_suppressed_category_warning_appears_only_under_private_details():
    """A record holding a category the DP schema release suppressed: dropped either way, and
    the warning that says so only under private details."""
    released = Schema(columns=SCHEMA.columns, from_release=True)
    neighbour = _plus(FRAME, x=0.5, c="Rare-Qq")
    assert _warnings(lambda: released.conform(FRAME)) == []
    assert _warnings(lambda: released.conform(neighbour)) == []
    assert len(released.conform(neighbour)) == N
    with show_private_details():
        assert _categories(lambda: released.conform(FRAME)) == []
        shown = _warnings(lambda: released.conform(neighbour))
    assert [c for c, _ in shown] == [SuppressedCategoryWarning]
    assert "'c'" in shown[0][1] and "Rare-Qq" not in shown[0][1]


def test_suppressed_category_mapped_to_other_warns_only_under_private_details():
    schema = Schema(
        columns=(SCHEMA["x"], Column(name="c", kind="categorical", categories=("a", "b", "other")))
    )
    release = SchemaRelease(schema, PrivacyLedger(), other="other")
    neighbour = _plus(FRAME, x=0.5, c="Rare-Qq")
    assert _warnings(lambda: release.conform(FRAME)) == []
    assert _warnings(lambda: release.conform(neighbour)) == []
    assert release.conform(neighbour).frame["c"].iloc[-1] == "other"
    with show_private_details():
        assert _categories(lambda: release.conform(FRAME)) == []
        shown = _warnings(lambda: release.conform(neighbour))
    assert [c for c, _ in shown] == [SuppressedCategoryWarning] and "'other'" in shown[0][1]


# -- delta >= 1/n: n is private ----------------------------------------------------------------


def test_delta_warning_appears_only_under_private_details():
    """delta = 1/20: a table of 20 rows has delta >= 1/n, its neighbour of 19 rows not."""
    budget = PrivacyBudget(epsilon=1.0, delta=1.0 / N)
    smaller = FRAME.iloc[:-1]

    def fit(frame: pd.DataFrame) -> Callable[[], object]:
        def run() -> object:
            with warnings.catch_warnings():  # read off the released counts: not private
                warnings.simplefilter("ignore", NoSignalWarning)
                return base.fit_model(jax.random.key(0), "marginals", frame, budget, schema=SCHEMA)

        return run

    assert _warnings(fit(FRAME)) == _warnings(fit(smaller)) == []
    with show_private_details():
        assert _categories(fit(smaller)) == []
        shown = _warnings(fit(FRAME))
    assert [c for c, _ in shown] == [base.DeltaWarning] and "1/n = 0.05" in shown[0][1]


# -- encoders and DP-SGD ---------------------------------------------------------------------------


def test_pca_out_of_bounds_warning_appears_only_under_private_details():
    from jdp.encoding.pca import dp_pca_laplace

    x = np.random.default_rng(0).uniform(-1, 1, size=(N, 3))
    neighbour = np.vstack([x, [[7.0, 0.0, 0.0]]])

    def pca(data: np.ndarray) -> Callable[[], object]:
        rng = np.random.default_rng(1)
        return lambda: dp_pca_laplace(rng, data, 2, epsilon=1.0, lower=-1, upper=1)

    assert _warnings(pca(x)) == _warnings(pca(neighbour)) == []
    with show_private_details():
        assert _categories(pca(x)) == []
        shown = _warnings(pca(neighbour))
    assert len(shown) == 1 and "outside the declared bounds" in shown[0][1]


def test_non_finite_gradient_warning_appears_only_under_private_details():
    """A run's end-of-run check (the count of non-finite per-example gradients it saw)."""
    from jdp.dpsgd.run import Run
    from jdp.dpsgd.step import DPSGDState

    def check(count: int) -> Callable[[], object]:
        state = DPSGDState(None, None, None, 0, jnp.asarray(count, jnp.int32))
        return lambda: Run.finish(None, state)

    assert _warnings(check(0)) == _warnings(check(1)) == []
    with show_private_details():
        assert _categories(check(0)) == []
        shown = _warnings(check(1))
    assert [c for c, _ in shown] == [RuntimeWarning] and "non-finite" in shown[0][1]
