#!/usr/bin/env bash
# Recreates every shipped trace (run from the repository root, inside the project venv).
# Timings depend on the machine and its load; work counts, transitions and learning
# curves are the same for the same seed.
set -euo pipefail
rldse capture tabular --env FrozenLake-v1 --steps 50000 --seed 0 --force -o traces/tabular_frozenlake.parquet
rldse capture tabular --env Taxi-v4 --steps 40000 --seed 0 --force -o traces/tabular_taxi.parquet
rldse capture dqn --env CartPole-v1 --steps 20000 --seed 0 --replay uniform --force -o traces/dqn_cartpole_uniform.parquet
rldse capture dqn --env CartPole-v1 --steps 20000 --seed 0 --replay per --force -o traces/dqn_cartpole_per.parquet
rldse capture ddpg --env Pendulum-v1 --steps 10000 --seed 0 --force -o traces/ddpg_pendulum.parquet
rldse capture actor_learner --env CartPole-v1 --actors 2 --steps 50000 --seed 0 --force -o traces/actor_learner_cartpole_2.parquet
rldse capture actor_learner --env ALE/Pong-v5 --actors 2 --steps 4096 --seed 0 --force -o traces/pong_ppo.parquet
