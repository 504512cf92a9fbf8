"""The decoding threads come from a process-wide pool of parked threads: tables decoded on
it are the one-thread ones whichever thread takes which rows, from several Python threads
at once, after a task of the pool failed, and in a child made by ``fork()`` (whose parent's
pool threads do not exist in it)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import bytewright as bw
import pytest
from column_oracles import Lab, decode_error

pa = pytest.importorskip("pyarrow")


class Flagged(bw.Struct, byteorder="little"):
    ok: bw.Bool
    n: bw.U32


ROWS = 70_001  # many chunks of rows on every thread count, the last one short


def lab_wire(rows: int = ROWS) -> bytes:
    return b"".join(
        Lab(a=i, b=i % 65536, c=(i * 7) % 65536, d=2**63 + i).pack() for i in range(rows)
    )


def test_every_thread_count_gives_the_one_thread_table() -> None:
    wire = lab_wire()
    want = Lab.unpack_table(wire, threads=1).to_arrow()
    assert want["a"].to_pylist() == list(range(ROWS))
    for threads in (2, 3, 4, 8, 100):
        assert Lab.unpack_table(wire, threads=threads).to_arrow().equals(want)


@pytest.mark.parametrize("bad", [[0], [4095, 4096], [30_000, 69_999], [70_000], [5, 64_000]])
def test_the_first_bad_row_is_the_error_on_every_thread_count(bad: list[int]) -> None:
    wire = bytearray(b"".join(Flagged(ok=bool(i % 2), n=i).pack() for i in range(ROWS)))
    for row in bad:
        wire[row * 5] = 2
    want = decode_error(bw.compile(Flagged).iter_unpack, bytes(wire))
    assert want is not None
    assert want[1:] == (f"[{bad[0]}].ok", bad[0] * 5)
    for threads in (1, 2, 3, 4, 8):
        assert decode_error(Flagged.unpack_table, bytes(wire), threads=threads) == want


def test_python_threads_decoding_at_once_get_their_own_tables() -> None:
    wires = [lab_wire(20_000 + 997 * k) for k in range(4)]
    wants = [Lab.unpack_table(w, threads=1).to_arrow() for w in wires]
    failures: list[str] = []

    def work(k: int) -> None:
        for _ in range(10):
            if not Lab.unpack_table(wires[k], threads=3).to_arrow().equals(wants[k]):
                failures.append(f"thread {k}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork()")
def test_a_child_made_by_fork_decodes_on_threads_of_its_own() -> None:
    # In a fresh interpreter, so that pytest's own threads are not forked. The parent forks
    # once with its pool idle and once while another thread decodes on the pool.
    script = textwrap.dedent(
        """
        import os, sys, threading, warnings
        import bytewright as bw

        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads running

        class Lab(bw.Struct, byteorder="little"):
            a: bw.U32
            b: bw.U16
            c: bw.U16
            d: bw.U64

        wire = b"".join(Lab(a=i, b=i % 65536, c=3, d=i).pack() for i in range(50_000))
        want = Lab.unpack_table(wire, threads=2).to_arrow()
        stop = threading.Event()

        def busy():
            while not stop.is_set():
                assert Lab.unpack_table(wire, threads=2).to_arrow().equals(want)

        def fork_and_check():
            pid = os.fork()
            if pid == 0:
                ok = all(
                    Lab.unpack_table(wire, threads=t).to_arrow().equals(want) for t in (2, 3, 1, 2)
                )
                os._exit(0 if ok else 1)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0, status

        fork_and_check()
        worker = threading.Thread(target=busy)
        worker.start()
        for _ in range(5):
            fork_and_check()
        stop.set()
        worker.join()
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
