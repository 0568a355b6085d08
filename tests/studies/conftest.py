"""Every figure a study test draws must be legible (rldse.studies.common.ILLEGIBLE)."""

from __future__ import annotations

import pytest

from rldse.studies import common


@pytest.fixture(autouse=True)
def _figures_are_legible():
    common.ILLEGIBLE.clear()
    yield
    assert not common.ILLEGIBLE, f"illegible figures: {common.ILLEGIBLE}"
