"""Every Python example in docs/pickle.md runs and its assertions hold."""

import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "pickle.md"


def test_docs_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 8
    namespace: dict = {"__name__": "docs_pickle"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
