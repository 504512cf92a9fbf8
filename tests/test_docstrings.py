"""Every public name has a docstring with a summary line and an example, and every example
in a docstring runs (the API reference of the documentation site is made from them).

Public names are those of ``bytewright``, ``bytewright.pickle``, ``bytewright.dask`` and
the modules of ``bytewright.formats`` (their ``__all__``). Native classes and functions are
documented in ``_native.pyi``, which is what the site reads for them; names that are values
(the scalar aliases, ``REST``, a format's constants ...) are documented in
docs/reference/api.md and docs/reference/formats.md.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import tempfile
from pathlib import Path
from typing import Any

import bytewright
import bytewright.pickle
import pytest

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "python" / "bytewright" / "_native.pyi"
API = ROOT / "docs" / "reference" / "api.md"
FORMATS = ROOT / "docs" / "reference" / "formats.md"


def _namespaces() -> list[Any]:
    formats = importlib.import_module("bytewright.formats")
    out: list[Any] = [bytewright, bytewright.pickle]
    out += [importlib.import_module(f"{formats.__name__}.{name}") for name in formats.__all__]
    try:
        out.append(importlib.import_module("bytewright.dask"))
    except ImportError:  # dask is an extra: without it, its names are not checked
        pass
    return out


def _public() -> list[tuple[str, Any]]:
    return [
        (f"{ns.__name__}.{name}", getattr(ns, name))
        for ns in _namespaces()
        for name in ns.__all__
        if name != "__version__"
    ]


def _stub_docs() -> dict[str, str]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    docs: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            docs[node.name] = ast.get_docstring(node) or ""
    return docs


def _documented(obj: Any) -> bool:
    return inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)


def _native_name(obj: Any) -> str | None:
    """The name under which the extension module defines ``obj``, if it does."""
    from bytewright import _native

    return next((k for k, v in vars(_native).items() if v is obj), None)


def _native(obj: Any) -> bool:
    return _native_name(obj) is not None


def _doc(obj: Any) -> str:
    native = _native_name(obj)
    if native is not None:
        return _stub_docs().get(native, "")
    return obj.__doc__ or ""


@pytest.mark.parametrize("name,obj", _public(), ids=[n for n, _ in _public()])
def test_public_name_has_summary_and_example(name: str, obj: Any) -> None:
    if not _documented(obj):
        # A value (a scalar alias, a constant): the API reference describes it.
        short = name.rsplit(".", 1)[1]
        assert f"{short}`" in API.read_text() + FORMATS.read_text(), name
        return
    doc = _doc(obj)
    assert doc.strip(), f"{name} has no docstring"
    summary = doc.strip().splitlines()[0]
    assert (summary and summary[0].isupper()) or summary.startswith(("`", "``")), name
    assert ">>>" in doc, f"{name}: no example in its docstring"


def _modules() -> list[str]:
    mods = {obj.__module__ for _, obj in _public() if _documented(obj) and not _native(obj)}
    return sorted(mods)


@pytest.mark.parametrize("module", _modules())
def test_docstring_examples_run(
    module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in test_docs: the examples' ``tempfile`` folders go under this test's folder.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mod = importlib.import_module(module)
    finder = doctest.DocTestFinder(recurse=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    # Fresh globals: no ``from __future__`` flags of the module leak into the examples.
    for test in finder.find(mod, globs={}):
        runner.run(test, out=_collect)
    assert runner.failures == 0, "\n".join(_FAILURES)


def test_stub_examples_run() -> None:
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    ran = 0
    for name, doc in _stub_docs().items():
        if ">>>" in doc:
            runner.run(parser.get_doctest(doc, {}, name, str(STUB), 0), out=_collect)
            ran += 1
    assert ran >= 5
    assert runner.failures == 0, "\n".join(_FAILURES)


_FAILURES: list[str] = []


def _collect(text: str) -> None:
    _FAILURES.append(text)
