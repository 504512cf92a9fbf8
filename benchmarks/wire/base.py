"""What every Part A implementation provides."""

from __future__ import annotations

from typing import Protocol

from benchmarks.wire.workloads import Case


class Implementation(Protocol):
    name: str

    def case(self, workload: str, size: int) -> Case:
        """A ready Case; raises Unavailable or NotApplicable."""
        ...

    def build_telemetry(self) -> bytes:
        """Build the telemetry schema from nothing, then pack telemetry(1) with it.

        The first pack is included so that libraries which compile lazily pay for it too.
        """
        ...
