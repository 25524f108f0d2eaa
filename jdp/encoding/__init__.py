"""Encoding-phase algorithms on the host (numpy): DP-PCA, DP-EM, DP kernel k-means on random
Fourier features. Each returns its output with the privacy event it spent."""
