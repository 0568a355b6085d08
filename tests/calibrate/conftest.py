"""Calibration tests write into a temp dir and must leave the registry as they found it."""

from __future__ import annotations

import pytest

from rldse.models import registry


@pytest.fixture(autouse=True)
def _no_user_presets(monkeypatch):
    monkeypatch.delenv(registry.PRESETS_ENV, raising=False)
    previous = registry.use_preset_dirs([])
    yield
    registry.use_preset_dirs(previous)
