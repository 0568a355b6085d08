"""Byte sizes the real tabular loops (train.py) and their simulated twin (program/)
share."""

Q_BYTES = 4  # one fp32 or int32 Q-value
OFFLINE_TRANSITION_BYTES = 16  # state, action, reward, next_state: 4 bytes each
ONLINE_TRANSITION_BYTES = 17  # the same plus the done byte
