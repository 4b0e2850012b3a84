"""Session setup for every test directory (tests/, regression/): loaded first, before any test module imports numpy."""
import os

# One BLAS thread per process. `pytest -n auto` already runs a worker on each core, and OpenBLAS's own threads on
# top of that oversubscribe them, which slows the dense reference's many small solves several times over. It also
# makes the figures reproducible: a threaded LAPACK solve rounds differently with the thread count (m113's dense
# qdd, nv 168, moves at 1e-11 scaled between one and two threads). Set before numpy loads its OpenBLAS (xdist
# workers inherit this environment); a value already set in the environment wins.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
