"""Work counts and numeric kernels that every layer above may use: what a network's
operations cost (``network_work``: ``Work``, ``NetworkWork``), the numpy MLP and Adam
(``mlp``), replay buffers and the sum tree (``replay``) and the Nature-CNN's count
(``nature_cnn``). The host fingerprint times them, the real loops run them, recordings and
programs count with them; they import nothing of rldse but its errors."""
