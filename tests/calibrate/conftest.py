"""Calibration tests write into a temp dir and must leave the preset directories as they found it."""

from __future__ import annotations

import pytest

from rldse.models import presets


@pytest.fixture(autouse=True)
def _no_user_presets(monkeypatch):
    monkeypatch.delenv(presets.PRESETS_ENV, raising=False)
    previous = presets.use_preset_dirs([])
    yield
    presets.use_preset_dirs(previous)
