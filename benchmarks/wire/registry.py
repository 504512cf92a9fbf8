"""The Part A implementations, in report order."""

from __future__ import annotations

from benchmarks.wire.base import Implementation
from benchmarks.wire.impl_bytewright import BytewrightCodecImpl, BytewrightTypedImpl
from benchmarks.wire.impl_construct import ConstructImpl
from benchmarks.wire.impl_ctypes import CtypesImpl
from benchmarks.wire.impl_dcs import DataclassesStructImpl
from benchmarks.wire.impl_rustruct import RustructCoreImpl, RustructTypedImpl
from benchmarks.wire.impl_struct import StructImpl


def implementations() -> list[Implementation]:
    return [
        StructImpl(),
        CtypesImpl(),
        DataclassesStructImpl(),
        ConstructImpl(),
        RustructCoreImpl(),
        RustructTypedImpl(),
        BytewrightCodecImpl(),
        BytewrightTypedImpl(),
    ]
