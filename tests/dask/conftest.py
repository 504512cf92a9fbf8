"""A real distributed cluster on loopback, shared by the tests of one module.

Two worker processes with one thread each; the "bytewright" family is registered in this
process and, through `FamilyPlugin`, on every worker, with the test hook on top.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import bytewright.dask
import dask
import family_hook
import pytest
from dask_shapes import CLASSES, KEY, SHARD
from distributed import Client, LocalCluster


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    bytewright.dask.register(classes=CLASSES, hmac_key=KEY)
    family_hook.install()
    with (
        dask.config.set({"distributed.comm.shard": SHARD}),
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            protocol="tcp",
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.CRITICAL + 1,
        ) as cluster,
        Client(cluster, serializers=["bytewright"], deserializers=["bytewright", "error"]) as c,
    ):
        c.register_plugin(bytewright.dask.FamilyPlugin(classes=CLASSES, hmac_key=KEY))
        c.run(family_hook.install)
        yield c


@pytest.fixture
def wire(client: Client) -> Iterator[Client]:
    """The client, with recording started everywhere and the family restored afterwards."""
    client.run(family_hook.start)
    family_hook.start()
    yield client
    family_hook.register(KEY)  # first here: the workers' answers below are signed again
    client.run(family_hook.register, KEY)
    client.run(family_hook.stop)
    family_hook.stop()
