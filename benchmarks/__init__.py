"""Side-by-side benchmarks of the toolkit and the reference clients (``make bench``)."""
