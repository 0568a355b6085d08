"""A hand-written DQN that keeps its replay buffer in plain numpy arrays (no class) and
samples it with ``np.random.randint``, acting epsilon-greedily in a SyncVectorEnv of
RecordEpisodeStatistics envs; the target network is refreshed by ``load_state_dict``
every --target-every steps; episodic returns printed from ``infos``."""
import argparse

import gymnasium as gym
import numpy as np
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=3)
parser.add_argument("--steps", type=int, default=2000)
parser.add_argument("--capacity", type=int, default=1500)
parser.add_argument("--batch", type=int, default=32)
parser.add_argument("--warmup", type=int, default=300)
parser.add_argument("--train-every", type=int, default=4)
parser.add_argument("--target-every", type=int, default=250)
args = parser.parse_args()

np.random.seed(args.seed)
torch.manual_seed(args.seed)
envs = gym.vector.SyncVectorEnv(
    [lambda: gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1"))])
n_obs, n_act = envs.single_observation_space.shape[0], int(envs.single_action_space.n)

q = nn.Sequential(nn.Linear(n_obs, 64), nn.ReLU(), nn.Linear(64, n_act))
q_target = nn.Sequential(nn.Linear(n_obs, 64), nn.ReLU(), nn.Linear(64, n_act))
q_target.load_state_dict(q.state_dict())
opt = torch.optim.Adam(q.parameters(), lr=1e-3)

obs_buf = np.zeros((args.capacity, n_obs), np.float32)
next_buf = np.zeros((args.capacity, n_obs), np.float32)
act_buf = np.zeros(args.capacity, np.int64)
rew_buf = np.zeros(args.capacity, np.float32)
done_buf = np.zeros(args.capacity, np.float32)
ptr = size = 0

obs, _ = envs.reset(seed=args.seed)
for step in range(args.steps):
    epsilon = max(0.05, 1.0 - step / (0.5 * args.steps))
    if np.random.rand() < epsilon:
        action = np.array([np.random.randint(n_act)])
    else:
        with torch.no_grad():
            action = q(torch.as_tensor(obs)).argmax(1).numpy()
    next_obs, reward, term, trunc, infos = envs.step(action)
    if "episode" in infos:
        for i in np.flatnonzero(infos["_episode"]):
            print(f"step={step}, episodic_return={infos['episode']['r'][i]}")
    obs_buf[ptr], next_buf[ptr], act_buf[ptr] = obs[0], next_obs[0], action[0]
    rew_buf[ptr], done_buf[ptr] = reward[0], term[0]
    ptr, size = (ptr + 1) % args.capacity, min(size + 1, args.capacity)
    obs = next_obs

    if step >= args.warmup and step % args.train_every == 0:
        idx = np.random.randint(0, size, size=args.batch)
        o, o2 = torch.as_tensor(obs_buf[idx]), torch.as_tensor(next_buf[idx])
        a, r, d = (torch.as_tensor(act_buf[idx]), torch.as_tensor(rew_buf[idx]),
                   torch.as_tensor(done_buf[idx]))
        with torch.no_grad():
            target = r + 0.99 * (1 - d) * q_target(o2).max(1).values
        loss = nn.functional.mse_loss(q(o).gather(1, a.unsqueeze(1)).squeeze(1), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if step % args.target_every == 0:
        q_target.load_state_dict(q.state_dict())
envs.close()
