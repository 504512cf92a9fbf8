"""The side-by-side benchmark suite behind `make bench` (never imported by the library).

Run it with ``python -m benchmarks [--only PART] [--profile smoke|default|full]``.
"""

import os

# NumPy's BLAS runs no timed work here, but after any BLAS call (a plot's transform, say)
# its idle threads spin for a while, and on a small machine one of them takes the core a
# threaded arm was timed on: on 2 cores, `unpack_table(threads=2)` ran 1.26-1.52x faster
# than threads=1 right after a 200x200 matmul, and 1.64-1.72x without one (or with one
# BLAS thread). One BLAS thread, set before anything imports NumPy, keeps every core for
# the arms. A value the caller set is kept.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
