"""Recording other frameworks' training loops as rldse traces, one module per framework
(``sb3``: Stable-Baselines3; ``trl``: TRL's GRPOTrainer), each importing its framework only
when imported itself."""
