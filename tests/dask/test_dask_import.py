"""Dask is optional: importing bytewright never imports it."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import pkgutil, sys
import bytewright

def modules(package):
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.name == "bytewright.dask":
            continue
        module = __import__(info.name, fromlist=["_"])
        yield info.name
        if info.ispkg:
            yield from modules(module)

def loaded(names):
    return sorted({name.split(".")[0] for name in sys.modules} & set(names))

names = list(modules(bytewright))
assert "bytewright.pickle._buffers" in names and "bytewright.formats.pcap" in names, names
assert not loaded({"dask", "distributed"}), loaded({"dask", "distributed"})
import bytewright.dask
assert loaded({"dask", "distributed"}) == ["dask", "distributed"]
"""


def test_no_module_of_bytewright_but_bytewright_dask_imports_dask() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_import_bytewright_imports_no_third_party_package() -> None:
    code = (
        "import sys, bytewright, bytewright.pickle, bytewright.formats\n"
        "heavy = {'dask', 'distributed', 'numpy', 'pandas', 'pyarrow'}\n"
        "assert not {m.split('.')[0] for m in sys.modules} & heavy"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
