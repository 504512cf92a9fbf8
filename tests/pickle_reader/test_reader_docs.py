"""Every Python example in docs/pickle_reader.md runs and its assertions hold."""

import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "pickle_reader.md"


def test_docs_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 6
    namespace: dict = {"__name__": "docs_pickle_reader"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
