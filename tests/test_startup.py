"""Start-up stays cheap: importing bytewright loads only what every user needs.

Each check runs a fresh interpreter and looks at ``sys.modules`` (a timing would be flaky;
the time itself is a row of ``make bench``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

# Heavy or optional modules that load only when used: asyncio with read_messages' stream,
# typing with the first scalar alias (bw.U8 ...), json/ast with a schema that needs them.
NEVER_AT_IMPORT = [
    "asyncio",
    "ast",
    "dask",
    "dataclasses",
    "difflib",
    "inspect",
    "json",
    "numpy",
    "pandas",
    "polars",
    "pyarrow",
    "typing",
    "bytewright.formats",
    "bytewright.schema",
    # bw.explain's views and the pickle trees load when used.
    "rich",
    "pickletools",
    "bytewright._explain._text",
    "bytewright._explain._html",
    "bytewright._explain._formats",
    "bytewright.pickle._inspect",
]


def loaded_after(code: str) -> set[str]:
    """The modules loaded after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint('MODULES', *sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return set(out.split("MODULES", 1)[1].split())


@pytest.mark.parametrize(
    "code",
    ["import bytewright", "from bytewright import pickle"],
    ids=["bytewright", "bytewright.pickle"],
)
def test_import_loads_no_heavy_module(code: str) -> None:
    loaded = loaded_after(code)
    assert not loaded & set(NEVER_AT_IMPORT), sorted(loaded & set(NEVER_AT_IMPORT))
    if code == "import bytewright":
        assert "bytewright.pickle" not in loaded


def test_scalar_aliases_load_typing_on_first_use() -> None:
    loaded = loaded_after(
        "import sys, bytewright as bw\n"
        "assert 'typing' not in sys.modules\n"
        "import typing\n"
        "assert typing.get_origin(bw.U16) is typing.Annotated\n"
        "assert bw.U16 is bw.types.U16 and 'U16' in dir(bw)\n"
        "class P(bw.Struct):\n"
        "    x: bw.U16\n"
        "    data: bytes = bw.field(len='x')\n"
        "assert P(data=b'ab').pack() == b'\\x00\\x02ab'\n"
    )
    # A schema of plain fields needs neither the JSON module, nor the expression parser, nor
    # the Python half of describing a class.
    assert not loaded & {
        "json",
        "ast",
        "asyncio",
        "difflib",
        "dataclasses",
        "inspect",
        "bytewright.schema",
    }


def test_unknown_attribute_is_still_an_error() -> None:
    import bytewright as bw

    with pytest.raises(AttributeError, match="no attribute 'U17'"):
        bw.U17  # noqa: B018
    with pytest.raises(AttributeError):
        bw.types.U17  # noqa: B018
