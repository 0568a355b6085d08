"""How much the verl validation depends on what the mean response length is inferred
from: the 32-GPU colocated row's step time (what `rldse validate external --dataset verl`
uses) or its update_actor time. Prints, per anchor, the inferred length, every predicted
row's error, the median |error| and the async/colocated speed-ups. Then the bound on any
model that prices the same tokens at the same trainer GPU-seconds in every row (what one
inferred length allows): each row's update_actor predicted from the anchor row's
update_actor GPU-seconds, against the page's. Last, the anchor row's simulated phases at
its inferred length against the page's phase columns: where a step-time anchor puts the
length's error.

    python benchmarks/fidelity/verl_anchor_sensitivity.py
"""

from __future__ import annotations

import numpy as np

from rldse.external import verl


def main() -> None:
    for anchor in verl.ANCHORS:
        mean, d = verl.predictions(anchor)
        d = d.assign(error=d["predicted_s"] / d["step_s"] - 1)
        predicted = d[~(d["colocated"] & (d["gpus"] == 32))]
        print(f"anchor {anchor}: mean length {mean:,.0f} tokens, median |error| "
              f"{100 * np.median(np.abs(predicted['error'])):.1f} % over {len(predicted)} rows")
        for r in d.itertuples():
            print(f"  {verl.case(r):40s} measured {r.step_s:7.1f} s  predicted "
                  f"{r.predicted_s:7.1f} s  {100 * r.error:+6.1f} %")
        for gpus in (32, 64, 128):
            colo = d[d["colocated"] & (d["gpus"] == gpus)].iloc[0]
            asyn = d[(d["mode"] == "fully_async_policy") & (d["gpus"] == gpus)].iloc[0]
            print(f"  speed-up at {gpus}: measured {colo.step_s / asyn.step_s:.2f}, "
                  f"predicted {colo.predicted_s / asyn.predicted_s:.2f}")
    one_length_bound()
    anchor_phases()


#: The page's phase columns and the simulation's breakdown entries they compare with.
PHASES = (("gen_s", "generate_s"), ("old_log_prob_s", "logprob_s"), ("update_actor_s", "train_s"))


def anchor_phases() -> None:
    """The 32-GPU colocated row's phases, simulated at the mean length inferred from its
    step time, against the page's (the step matches by construction; its split need not)."""
    mean, t = verl.predictions()
    anchor = next(t[t["colocated"] & (t["gpus"] == 32)].itertuples())
    print(f"anchor phases at {mean:,.0f} tokens (page / simulated):")
    for column, part in PHASES:
        measured = float(getattr(anchor, column))
        simulated = verl.predict_s(anchor, mean, part)
        print(f"  {column:16s} {measured:7.1f} s / {simulated:7.1f} s "
              f"({100 * (simulated / measured - 1):+6.1f} %)")


def one_length_bound() -> None:
    """update_actor of every row if its trainer took the anchor row's GPU-seconds per step
    (the same tokens, the same cost per token): the best a one-length model can do."""
    _, t = verl.predictions()
    anchor = t[(t["mode"] == "colocate sync") & (t["gpus"] == 32)].iloc[0]
    gpu_s = anchor.update_actor_s * anchor.gpus
    print(f"one-length bound: the anchor's trainer takes {gpu_s:,.0f} GPU-s per step")
    for r in t.itertuples():
        trainer = r.gpus if r.mode == "colocate sync" else r.trainer_gpus
        bound = gpu_s / trainer
        print(f"  {verl.case(r):40s} update_actor measured {r.update_actor_s:6.1f} s, "
              f"bound {bound:6.1f} s ({100 * (bound / r.update_actor_s - 1):+6.1f} %)")


if __name__ == "__main__":
    main()
