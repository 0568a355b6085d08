"""Every shipped part kind's model offers the typed interface of each form it declares it
runs its roles in (rldse.models.kinds.FORM_PROTOCOLS), so a program that picks its
implementation by that form finds the methods it calls."""

from __future__ import annotations

import pytest

from rldse.models import PART_KINDS, load_part, make_model
from rldse.models.kinds import FORM_PROTOCOLS, PartModel, Runs
from rldse.models.presets import _presets_of


@pytest.mark.parametrize("kind", [k for k in PART_KINDS.values() if k.presets and k.serves],
                         ids=lambda k: k.name)
def test_each_kind_models_the_forms_it_serves(kind, host_fp):
    preset = next(iter(_presets_of(kind.name)))
    model = make_model(load_part(kind.name, preset, host=host_fp), capture_host=host_fp)
    assert isinstance(model, PartModel)
    for role, runs in kind.serves.items():
        assert isinstance(model, FORM_PROTOCOLS[runs]), (kind.name, role, runs)
    assert kind.issues_kernels == (Runs.KERNELS in kind.serves.values())


def test_forms_are_declared_per_role():
    assert all(set(k.serves) == k.roles for k in PART_KINDS.values())
    with pytest.raises(ValueError, match="unknown roles"):
        type(PART_KINDS["cpu"])(name="x", spec=PART_KINDS["cpu"].spec, model=lambda s, c: s,
                                description="x", serves={"fly": Runs.CORES})
