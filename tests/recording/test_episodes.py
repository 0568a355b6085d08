"""Episode returns read from a step's info, as each library reports them, else summed."""

import numpy as np

from rldse.recording.episodes import Episodes


def step(reward, done, info):
    return (None, np.asarray(reward, float), np.asarray(done), np.zeros_like(done), info)


def test_record_episode_statistics_mask_gymnasium_1():
    eps = Episodes()
    info = {"episode": {"r": np.array([0.0, 7.5, 3.0])}, "_episode": np.array([0, 1, 0], bool)}
    assert eps.step(step([1, 1, 1], [False, True, False], info)) == 1
    assert eps.returns == [7.5]  # the wrapper's number, not the rewards summed here (1)


def test_final_info_gymnasium_0_29_and_monitor():
    eps = Episodes()
    info = {"final_info": np.array([None, {"episode": {"r": np.array([4.0])}}], object),
            "_final_info": np.array([False, True])}
    assert eps.step(step([1, 1], [False, True], info)) == 1
    assert eps.step((None, 1.0, True, False, {"episode": {"r": 9.0}})) == 1  # SB3's Monitor
    assert eps.returns == [4.0, 9.0]


def test_without_info_the_rewards_since_each_envs_last_end():
    eps = Episodes()
    assert eps.step(step([1, 2], [False, False], {})) == 0
    assert eps.step(step([1, 2], [True, False], {})) == 1
    assert eps.step(step([5, 2], [True, True], {})) == 2
    assert eps.returns == [2.0, 5.0, 6.0]
    assert eps.step("not a step") == 0
