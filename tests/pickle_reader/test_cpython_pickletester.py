"""CPython's own pickle test suite, run against loads_pickle, load_pickle and PickleUnpickler.

`make test` fetches this interpreter's `Lib/test/pickletester.py` (and the `test.support`
it imports) from Debian's packages into `.venv/pickletester/` (tests/pickle_reader/
fetch_pickletester.sh). Four of its test classes run here: `AbstractUnpickleTests` and
`AbstractPickleTests` (pickle dumps, we load), `AbstractPickleModuleTests` and
`AbstractPicklerUnpicklerObjectTests`. Every class the suite defines is registered
(`classes=`), as a user registers the classes their pickles name.

Each load is also run through `pickle.loads` (on the suite's own data): where pickle
rejects a stream we must reject it with an exception of the same family (EOFError,
ValueError, TypeError, OverflowError, else UnpicklingError); where pickle accepts it and we
do not, that is a refusal. The tests we refuse are listed, each with the global or opcode
refused and why, in pickletester_refused.toml; a listed test must fail with exactly that
refusal, and one that passes fails the run, so the list cannot go stale.
"""

from __future__ import annotations

import contextlib
import pickle
import sys
import tomllib
import unittest
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bytewright.pickle import PickleUnpickler, UnpicklingError, load_pickle, loads_pickle

HERE = Path(__file__).parent
SUITE_DIR = HERE.parents[1] / ".venv" / "pickletester"
REFUSED_FILE = HERE / "pickletester_refused.toml"
SUITE_CLASSES = (
    "AbstractUnpickleTests",
    "AbstractPickleTests",
    "AbstractPickleModuleTests",
    "AbstractPicklerUnpicklerObjectTests",
)
# The families of exceptions that pickle.loads raises and that our errors must match.
FAMILIES = (EOFError, OverflowError, TypeError, ValueError)


def _import_suite() -> Any:
    """test.pickletester from the fetched copy, or None when it was not fetched."""
    if not (SUITE_DIR / "test" / "pickletester.py").is_file():
        return None
    cached = sys.modules.get("test")
    if cached is not None and not str(getattr(cached, "__file__", "")).startswith(str(SUITE_DIR)):
        # The interpreter's own test package was imported first: use the fetched one.
        for name in [m for m in sys.modules if m == "test" or m.startswith("test.")]:
            del sys.modules[name]
    sys.path.insert(0, str(SUITE_DIR))
    try:
        import test.pickletester as suite
    finally:
        sys.path.remove(str(SUITE_DIR))
    assert suite.__file__.startswith(str(SUITE_DIR)), suite.__file__
    return suite


suite = _import_suite()
REFUSED: dict[str, dict[str, str]] = tomllib.loads(REFUSED_FILE.read_text())


def suite_classes() -> dict[str, type]:
    """Every class the suite defines, under each name a pickle may use for it: its module
    and qualified name, and the path of attributes that reaches it (some are made by tests).
    """
    import __main__

    found: dict[str, type] = {}

    def walk(owner: Any, path: str, depth: int) -> None:
        for attr, value in list(vars(owner).items()):
            if not isinstance(value, type) or depth > 3:
                continue
            if value.__module__ not in (suite.__name__, "__main__"):
                continue
            for name in (f"{path}.{attr}", f"{value.__module__}.{value.__qualname__}"):
                if found.setdefault(name, value) is not value:
                    raise AssertionError(f"{name} names two classes")
            walk(value, f"{path}.{attr}", depth + 1)

    walk(suite, suite.__name__, 0)
    walk(__main__, "__main__", 0)
    return found


def _family(exc: BaseException) -> type[BaseException]:
    for family in FAMILIES:
        if isinstance(exc, family):
            return family
    return pickle.UnpicklingError


def _options(kwds: dict[str, Any]) -> dict[str, Any]:
    """The pickle.loads keywords loads_pickle takes (encoding=, errors=); fix_imports=False
    and buffers= are refused."""
    kwds = dict(kwds)
    if kwds.pop("fix_imports", True) is not True:
        raise UnpicklingError("fix_imports=False: loads_pickle always maps Python 2 names")
    if kwds.pop("buffers", None) is not None:
        raise UnpicklingError("buffers=: out-of-band buffers (NEXT_BUFFER) are not supported")
    codec = {k: kwds.pop(k) for k in ("encoding", "errors") if k in kwds}
    if kwds:
        raise TypeError(f"unexpected keywords {sorted(kwds)}")
    return codec


def checked_loads(data: bytes, **kwds: Any) -> Any:
    """loads_pickle, cross-checked against pickle.loads on the same stream."""
    codec = _options(kwds)  # what loads_pickle has no option for is refused before anything
    try:
        expected: Any = pickle.loads(data, **kwds)
        expected_error: BaseException | None = None
    except Exception as exc:
        expected_error = exc
    try:
        got = loads_pickle(data, classes=suite_classes(), **codec)
    except Exception as exc:
        if expected_error is None:
            raise  # a refusal: the test fails, and pickletester_refused.toml must say why
        family = _family(expected_error)
        if not isinstance(exc, family) or not isinstance(exc, pickle.UnpicklingError):
            raise AssertionError(
                f"error type differs: pickle.loads raised {expected_error!r}, "
                f"loads_pickle raised {exc!r} (expected an UnpicklingError that is a "
                f"{family.__name__}) for {data!r}"
            ) from exc
        raise
    if expected_error is not None:
        raise AssertionError(
            f"loads_pickle returned {got!r} where pickle.loads raised {expected_error!r} "
            f"for {data!r}"
        )
    del expected
    return got


def checked_load(file: Any, **kwds: Any) -> Any:
    return load_pickle(file, classes=suite_classes(), **_options(kwds))


class SuiteUnpickler(PickleUnpickler):
    """PickleUnpickler with the suite's classes registered, as the suite constructs it."""

    def __init__(self, file: Any, **kwds: Any) -> None:
        super().__init__(file, classes=suite_classes(), **_options(kwds))


class _Plain:
    """No subtests: the first failure ends a test, as our refusal check needs."""

    @contextlib.contextmanager
    def subTest(self, msg: Any = None, **params: Any) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            exc.add_note(f"subtest: {msg or ''} {params}")
            raise


def _cases() -> dict[str, type[unittest.TestCase]]:
    if suite is None:
        return {}

    class UnpickleTests(_Plain, suite.AbstractUnpickleTests, unittest.TestCase):
        bad_stack_errors = (pickle.UnpicklingError,)
        truncated_errors = (pickle.UnpicklingError,)
        loads = staticmethod(checked_loads)

    class PickleTests(_Plain, suite.AbstractPickleTests, unittest.TestCase):
        loads = staticmethod(checked_loads)
        pickler = pickle.Pickler

        @staticmethod
        def dumps(arg: Any, proto: int | None = None, **kwargs: Any) -> bytes:
            return pickle.dumps(arg, proto, **kwargs)

    class PickleModuleTests(_Plain, suite.AbstractPickleModuleTests, unittest.TestCase):
        dump = staticmethod(pickle.dump)
        dumps = staticmethod(pickle.dumps)
        load = staticmethod(checked_load)
        loads = staticmethod(checked_loads)
        Pickler = pickle.Pickler
        Unpickler = SuiteUnpickler

    class PicklerUnpicklerObjectTests(
        _Plain, suite.AbstractPicklerUnpicklerObjectTests, unittest.TestCase
    ):
        pickler_class = pickle.Pickler
        unpickler_class = SuiteUnpickler

    return {
        "AbstractUnpickleTests": UnpickleTests,
        "AbstractPickleTests": PickleTests,
        "AbstractPickleModuleTests": PickleModuleTests,
        "AbstractPicklerUnpicklerObjectTests": PicklerUnpicklerObjectTests,
    }


CASES = _cases()
IDS = [
    f"{base}.{name}"
    for base, case in CASES.items()
    for name in unittest.TestLoader().getTestCaseNames(case)
]


def test_suite_is_fetched() -> None:
    if suite is None:
        pytest.skip(f"{SUITE_DIR} is missing: `make test` fetches it (make pickletester)")
    assert set(CASES) == set(SUITE_CLASSES)
    assert len(IDS) > 150


def test_refusals_name_existing_tests() -> None:
    if suite is None:
        pytest.skip(f"{SUITE_DIR} is missing")
    assert sorted(set(REFUSED) - set(IDS)) == []
    for test_id, entry in REFUSED.items():
        assert set(entry) - {"kind"} == {"refuses", "reason"}, test_id
        assert entry.get("kind", "difference") == "difference", test_id
        assert entry["refuses"] and entry["reason"], test_id


@pytest.mark.parametrize("test_id", IDS)
def test_cpython(test_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the suite's files (test.support's TESTFN) go there
    base, name = test_id.split(".")
    case = CASES[base](name)
    refused = REFUSED.get(test_id)
    try:
        case.debug()  # setUp, the test, tearDown; exceptions propagate
    except unittest.SkipTest as exc:
        pytest.skip(str(exc))
    except Exception as exc:
        if refused is None:
            raise
        # A refusal is an UnpicklingError naming what it refuses; a listed difference
        # (kind = "difference") an AssertionError saying what differs.
        expected = AssertionError if refused.get("kind") == "difference" else UnpicklingError
        if not isinstance(exc, expected) or refused["refuses"] not in str(exc):
            raise AssertionError(
                f"{test_id} is listed as refusing {refused['refuses']!r} but failed otherwise"
            ) from exc
        pytest.xfail(f"refuses {refused['refuses']}: {refused['reason']}")
    if refused is not None:
        pytest.fail(f"{test_id} passes now: remove it from {REFUSED_FILE.name}")
