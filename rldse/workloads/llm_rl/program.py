"""The simulated twin of an LLM RL run: ``workload.steps`` steps of ``step.step`` under
``placement.protocol`` on the system's GPUs (``nodes`` × ``gpu.count``, inside a node over
its ``fabric``, between nodes over its ``network``).

Every step has the same shape (the same lengths), so one step is computed and booked
``steps`` times: each GPU device books its rollout-engine busy time as ``act`` and its
trainer time as ``learn`` (colocated GPUs both, one after the other; disaggregated GPUs the
role the split gives them, the rollout engines on the first nodes, as the
``workload.rollout_gpu`` preset where one is set: its power and price). The result's
``breakdown_s`` holds the step's parts and ``step_s``; a plan that does not fit its GPUs'
memory fails ``checks.gpu_memory`` with the reason among the warnings (and is timed as if
it fitted, so searches can compare it).
"""

from __future__ import annotations

from typing import Any

from rldse.errors import RldseError
from rldse.models.presets import load_part, make_model
from rldse.sim.machine import Outcome
from rldse.workloads.llm_rl.arch import arch
from rldse.workloads.llm_rl.step import StepPlan, check_parallel, step
from rldse.workloads.llm_rl.train import Parallel


def plan_of(machine: Any) -> StepPlan:
    """The step plan of ``machine``'s knobs and parts; RldseError naming the knob where
    they do not fit together."""
    k = machine.knobs
    gpus_dev = machine.of_kind("gpu")
    if not gpus_dev:
        raise RldseError("llm_rl runs on GPUs: the system has none (add a gpu section)",
                         where="gpu")
    gpu = machine.model("gpu")
    nodes, protocol = machine.system.nodes, machine.system.protocol
    per_node = nodes.gpus_per_node or len(gpus_dev)
    gpus = len(gpus_dev)
    rollout = k.rollout_gpus if k.rollout_gpus is not None else gpus // 2
    if protocol == "colocated":
        if k.rollout_gpus is not None:
            raise RldseError("colocated runs rollout and training on every GPU: "
                             "rollout_gpus applies to the other protocols",
                             where="workload.rollout_gpus")
        rollout = gpus
    elif not 1 <= rollout < gpus:
        raise RldseError(f"{rollout} rollout GPUs of {gpus}: expected at least one and "
                         "fewer than all (the rest train)", where="workload.rollout_gpus")
    train_gpus = gpus if protocol == "colocated" else gpus - rollout
    engine_gpu = gpu
    if k.rollout_gpu is not None:
        if protocol == "colocated":
            raise RldseError("colocated runs rollout and training on the same GPUs: "
                             "rollout_gpu applies to the other protocols",
                             where="workload.rollout_gpu")
        engine_gpu = make_model(load_part("gpu", k.rollout_gpu, where="workload.rollout_gpu"))
    if rollout % k.rollout_tp or k.rollout_tp > per_node:
        raise RldseError(f"rollout_tp {k.rollout_tp}: expected a divisor of the {rollout} "
                         f"rollout GPUs, at most the node's {per_node}",
                         where="workload.rollout_tp")
    check_parallel(train_gpus, k.train_tp, k.train_pp, k.train_cp, "workload.train_tp")
    if k.train_tp * k.train_cp > per_node:
        raise RldseError(f"train_tp × train_cp = {k.train_tp * k.train_cp} is more than "
                         f"a node's {per_node} GPUs", where="workload.train_tp")
    if k.prompts_per_step % k.train_batch:
        raise RldseError(f"train_batch {k.train_batch} does not divide prompts_per_step "
                         f"{k.prompts_per_step}", where="workload.train_batch")
    info = machine.system.info
    tokens = k.response_tokens
    mean = tokens.mean if tokens.mean is not None else info.response_tokens_mean
    cap = tokens.max if tokens.max is not None else info.response_tokens_max
    default_budget = 2 * (k.prompt_tokens + cap)  # verl's recipes: 2 × (prompt + response)
    host = machine.model("cpu").spec if "cpu" in machine.models else None
    return StepPlan(
        arch=arch(k.model), gpu=gpu, rollout_gpu=engine_gpu, gpus=gpus, gpus_per_node=per_node,
        fabric=nodes.fabric, network=nodes.network, nics=nodes.nics_per_node or None,
        host_bw_gbs=host.host_bw_gbs if host else 0.0,
        host_link_gbs=gpu.copy_bps / 1e9, protocol=protocol, rollout_gpus=rollout,
        prompts=k.prompts_per_step, responses=k.responses_per_prompt,
        train_batch=k.train_batch, prompt_tokens=k.prompt_tokens, response_mean=mean,
        response_max=cap, precision=k.precision, rollout_tp=k.rollout_tp,
        train=Parallel(train_gpus, k.train_tp, k.train_pp, k.train_cp),
        max_num_seqs=k.max_num_seqs, gpu_memory_utilization=k.gpu_memory_utilization,
        max_tokens_per_gpu=k.max_tokens_per_gpu or default_budget,
        logprob_tokens_per_gpu=int(1.5 * (k.max_tokens_per_gpu or default_budget)),
        old_logprob=k.old_logprob, ref_logprob=k.ref_logprob, offload=k.offload,
        staleness=k.staleness_threshold, partial_rollout=k.partial_rollout,
        require_batches=k.require_batches, trigger_sync_steps=k.trigger_parameter_sync_step,
        reward_s=0.0)


def program(machine: Any) -> Outcome:
    plan = plan_of(machine)
    times, mem = step(plan)
    steps = machine.knobs.steps
    responses = plan.prompts * plan.responses
    updates = steps * max(plan.prompts // plan.train_batch, 1)
    peak = int(max(mem.rollout_bytes, mem.train_bytes))
    if mem.reason:  # timed all the same (step.step), flagged with the reason
        gpu = machine.model("gpu")
        gpu.warnings = (*gpu.warnings, f"infeasible: {mem.reason}")
    devices = machine.of_kind("gpu")
    n_engine = plan.engine_gpus
    preset = machine.knobs.rollout_gpu
    if preset is not None:  # the engines' GPUs: their preset's power and price
        devices[:n_engine] = [machine.repart(d.name, preset, plan.rollout_gpu)
                              for d in devices[:n_engine]]
    now = 0.0
    for _ in range(steps):
        for i, dev in enumerate(devices):
            rollout_dev = plan.protocol == "colocated" or i < n_engine
            train_dev = plan.protocol == "colocated" or i >= n_engine
            t = now
            if rollout_dev:
                t = machine.book(dev, t, times.rollout_busy_s, "act", "rollout")
            if train_dev:
                machine.book(dev, t, times.train_busy_s, "learn", "trainer")
        now += times.step_s
        machine.mark_iterations(now)
    machine.clock.spend("rollout", "act", "gpu", steps * times.rollout_busy_s, steps)
    machine.clock.spend("trainer", "learn", "gpu", steps * times.train_busy_s, steps)
    machine.env.run(until=now)
    breakdown = {**{f"{k}_s": v for k, v in times.parts_s.items()}, "step_s": times.step_s}
    return Outcome(env_steps=steps * responses, updates=updates, breakdown_s=breakdown,
                   gpu_memory_peak_bytes=peak, checks={"gpu_memory": not mem.reason},
                   staleness_updates=times.lag_updates)
