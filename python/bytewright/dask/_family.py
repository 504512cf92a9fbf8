"""The "bytewright" serialization family of distributed: data crosses the wire as safe records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from distributed import WorkerPlugin
from distributed.protocol.serialize import register_serialization_family

from bytewright.pickle import Limits
from bytewright.pickle._buffers import MIN_FRAME_BYTES, Frame, dumps_frames, loads_frames
from bytewright.pickle._classes import class_map

if TYPE_CHECKING:
    from distributed import Worker

FAMILY = "bytewright"

Buffer = bytes | bytearray | memoryview
Classes = Iterable[type] | Mapping[str, type]


class Family:
    """The `dumps`/`loads` pair that `register` hands to distributed, with its settings."""

    def __init__(
        self,
        *,
        classes: Classes = (),
        hmac_key: Buffer | None = None,
        limits: Limits | None = None,
        min_frame_bytes: int = MIN_FRAME_BYTES,
    ) -> None:
        if hmac_key is not None:
            if not isinstance(hmac_key, bytes | bytearray | memoryview):
                raise TypeError(
                    "hmac_key must be bytes, bytearray or memoryview, "
                    f"not {type(hmac_key).__name__}"
                )
            hmac_key = bytes(hmac_key)
            if not hmac_key:
                raise ValueError("hmac_key must not be empty")
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a pickle.Limits, not {type(limits).__name__}")
        if type(min_frame_bytes) is not int or min_frame_bytes < 0:
            raise ValueError(f"min_frame_bytes must be a non-negative int, not {min_frame_bytes!r}")
        self.classes = class_map(classes)
        self.hmac_key = hmac_key
        self.limits = limits
        self.min_frame_bytes = min_frame_bytes

    def dumps(self, value: Any) -> tuple[dict[str, Any], list[Frame]]:
        """`value` as distributed's (header, frames): a record, then the buffers it refers to."""
        frames = dumps_frames(value, hmac_key=self.hmac_key, min_frame_bytes=self.min_frame_bytes)
        return {}, frames

    def loads(self, header: dict[str, Any], frames: list[Frame]) -> Any:
        """The value of (header, frames) written by `dumps` with the same key."""
        return loads_frames(
            frames, classes=self.classes, hmac_key=self.hmac_key, limits=self.limits
        )


def register(
    *,
    classes: Classes = (),
    hmac_key: Buffer | None = None,
    limits: Limits | None = None,
) -> None:
    """Register (or replace) the "bytewright" serialization family in this process.

    `classes` are the only user classes that values read through the family may hold;
    with `hmac_key`, every value is signed when written and verified when read, and
    unsigned or altered frames are refused. `limits` bound what one value may decode to.

    >>> from distributed.protocol import deserialize, serialize
    >>> from bytewright.dask import register
    >>> register(hmac_key=b"cluster key")
    >>> header, frames = serialize({"a": [1, 2]}, serializers=["bytewright"])
    >>> header["serializer"]
    'bytewright'
    >>> deserialize(header, frames, deserializers=["bytewright"])
    {'a': [1, 2]}
    """
    family = Family(classes=classes, hmac_key=hmac_key, limits=limits)
    register_serialization_family(FAMILY, family.dumps, family.loads)


class FamilyPlugin(WorkerPlugin):
    """Registers the family on every worker of a cluster, those that join later included.

    With `transfers=True` (the default) each worker also asks its peers for data in the
    family, as `Worker(serializers=["bytewright"], deserializers=["bytewright", "error"])`
    would. The plugin, and so `hmac_key`, reaches the workers through the scheduler over
    Dask's control channel: use TLS, or `register` in a worker preload, to keep the key off
    an unencrypted network.

    >>> from bytewright.dask import FamilyPlugin
    >>> plugin = FamilyPlugin(hmac_key=b"cluster key")
    >>> plugin.name
    'bytewright-family'

    With a client: ``client.register_plugin(FamilyPlugin(hmac_key=key))``.
    """

    name = "bytewright-family"

    def __init__(
        self,
        *,
        classes: Classes = (),
        hmac_key: Buffer | None = None,
        limits: Limits | None = None,
        transfers: bool = True,
    ) -> None:
        # Checked here, so a bad argument fails at the client, not on every worker.
        family = Family(classes=classes, hmac_key=hmac_key, limits=limits)
        self.classes = family.classes
        self.hmac_key = family.hmac_key
        self.limits = family.limits
        self.transfers = bool(transfers)

    def setup(self, worker: Worker) -> None:
        register(classes=self.classes, hmac_key=self.hmac_key, limits=self.limits)
        if self.transfers:
            worker.rpc.serializers = [FAMILY]
            worker.rpc.deserializers = [FAMILY, "error"]
