#!/usr/bin/env bash
# Recreates every shipped trace (run from the repository root, inside the project venv).
# Timings depend on the machine and its load; work counts, transitions and learning
# curves are the same for the same seed.
set -euo pipefail
rldse capture tabular --env FrozenLake-v1 --steps 50000 --seed 0 --force -o traces/tabular_frozenlake.parquet
rldse capture tabular --env Taxi-v4 --steps 40000 --seed 0 --force -o traces/tabular_taxi.parquet
rldse capture dqn --env CartPole-v1 --steps 20000 --seed 0 --replay uniform --force -o traces/dqn_cartpole_uniform.parquet
rldse capture dqn --env CartPole-v1 --steps 20000 --seed 0 --replay per --force -o traces/dqn_cartpole_per.parquet
# the AMPER study's AMPER-k run (studies/amper_replay/study.yaml: learning, amper; its end_to_end.trace)
rldse capture dqn --env CartPole-v1 --steps 8000 --seed 0 --replay amper_k --force -o traces/amper_k_cartpole.parquet
rldse capture ddpg --env Pendulum-v1 --steps 10000 --seed 0 --force -o traces/ddpg_pendulum.parquet
rldse capture actor_learner --env CartPole-v1 --actors 2 --steps 50000 --seed 0 --force -o traces/actor_learner_cartpole_2.parquet
rldse capture actor_learner --env ALE/Pong-v5 --actors 2 --steps 4096 --seed 0 --force -o traces/pong_ppo.parquet
# offline tabular over SwiftRL's Taxi dataset (github.com/kailashg26/SwiftRL, Taxi_trajectories_10k.txt);
# SWIFTRL_DATA: the folder holding it. The reference-engine checks (rldse.sim.agreement) use it.
rldse capture tabular --env auto --dataset "${SWIFTRL_DATA:?set SWIFTRL_DATA to the SwiftRL datasets folder}/Taxi_trajectories_10k.txt" --agents 7 --dtype fp32 --set passes=4 --set passes_per_round=1 --set workers=2 --seed 0 --force -o traces/tabular_taxi_offline_7.parquet
rldse capture llm_rl --env rldse/Arithmetic-v0 --steps 4 --seed 0 --force -o traces/llm_rl_grpo.parquet
