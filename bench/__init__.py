"""Benchmarks of convlog (not tests): `make bench` runs `python -m bench.core`."""
