"""`python -m bytewright.pickle inspect` and `convert`."""

import collections
import datetime
import os
import pickle
import subprocess
import sys

from bytewright.pickle import loads
from bytewright.pickle.__main__ import describe, main

EXPLOIT = b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93\x8c\x04true\x85R."
VALUE = {"when": datetime.date(2024, 5, 6), "counts": collections.Counter("hello"), "n": [1, 2]}


def test_describe_lists_imports_and_calls_without_running():
    info = describe(EXPLOIT)
    assert info["imports"] == ["os.system"]
    assert info["calls"] == {"REDUCE": 1}
    assert info["protocol"] == 4
    info = describe(b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94h\x00h\x01\x93.")
    assert "os.system" in info["imports"]


def test_inspect_accepted(tmp_path, capsys):
    path = tmp_path / "ok.pkl"
    path.write_bytes(pickle.dumps(VALUE, 2))
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "datetime.date" in out and "collections.Counter" in out
    assert "loads_pickle: accepted" in out


def test_inspect_rejected(tmp_path, capsys):
    path = tmp_path / "bad.pkl"
    path.write_bytes(EXPLOIT)
    assert main(["inspect", str(path)]) == 1
    out = capsys.readouterr().out
    assert "os.system" in out and "loads_pickle: rejected" in out


def test_inspect_malformed(tmp_path, capsys):
    path = tmp_path / "trunc.pkl"
    path.write_bytes(pickle.dumps(VALUE, 4)[:-7])
    assert main(["inspect", str(path)]) == 1
    out = capsys.readouterr().out
    assert "malformed" in out and "rejected" in out


def test_convert(tmp_path, capsys):
    src, dst = tmp_path / "in.pkl", tmp_path / "out.bw"
    src.write_bytes(pickle.dumps(VALUE, 0))
    assert main(["convert", str(src), str(dst)]) == 0
    assert loads(dst.read_bytes()) == VALUE


def test_convert_refuses_an_exploit(tmp_path, capsys):
    src, dst = tmp_path / "in.pkl", tmp_path / "out.bw"
    src.write_bytes(EXPLOIT)
    assert main(["convert", str(src), str(dst)]) == 1
    assert "os.system" in capsys.readouterr().err
    assert not dst.exists()


def test_module_entry_point(tmp_path):
    path = tmp_path / "ok.pkl"
    path.write_bytes(pickle.dumps([1, 2, 3]))
    env = dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-m", "bytewright.pickle", "inspect", str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "accepted" in done.stdout
