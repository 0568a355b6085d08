"""Real-loop pieces the workload families share: the recorder, the capture request and
the helpers that turn recorders into a Trace, and the Atari environments. (The numpy MLP,
replay buffers and work counts are rldse.kernels, below the host fingerprint.)"""
