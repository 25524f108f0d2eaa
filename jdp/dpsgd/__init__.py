"""DP-SGD: batch selection, per-example clipping (general and ghost paths), noise, multi-device
sums, clip schedules and the training loop (:func:`jdp.dpsgd.train.train`)."""
