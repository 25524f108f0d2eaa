"""Privacy mechanisms on the host (numpy): noise (Gaussian, Laplace, snapping) and chunked
sufficient statistics. Every draw of privacy noise outside DP-SGD lives here."""
