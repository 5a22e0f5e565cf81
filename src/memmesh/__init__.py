"""memmesh: a team-sharing, peer-to-peer memory network for developers and their agents."""

import os
import sys

# Recall multiplies one query vector by the matrix: a single BLAS thread does that fastest,
# and BLAS thread pools spinning on a busy laptop made each search several times slower
# (see docs/benchmarks.md). Only settable before numpy loads; an explicit setting wins.
# OpenMP is left alone: the optional model embedder uses it for its own work.
if "numpy" not in sys.modules:
    for _variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")

from memmesh.errors import MemmeshError

__version__ = "0.1.0"

__all__ = ["MemmeshError", "__version__"]
