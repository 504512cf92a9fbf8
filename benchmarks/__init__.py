"""The side-by-side benchmark suite behind `make bench` (never imported by the library).

Run it with ``python -m benchmarks [--only PART] [--profile smoke|default|full]``.
"""
