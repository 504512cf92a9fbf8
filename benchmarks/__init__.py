"""The side-by-side benchmark suite behind `make bench` (never imported by the library).

Run it with ``python -m benchmarks [--only wire|lab|pickle] [--profile smoke|default|full]``.
"""
