"""Real-loop pieces the workload families share: the recorder, the numpy MLP and Adam,
replay buffers, and the capture helpers that turn recorders into a Trace."""
