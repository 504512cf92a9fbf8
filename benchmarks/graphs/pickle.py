"""The standard library's pickle, protocol 5."""

from __future__ import annotations

import pickle
from functools import partial

from benchmarks.graphs.serializer import Serializer

ARMS = {"pickle": lambda: Serializer(partial(pickle.dumps, protocol=5), pickle.loads)}
