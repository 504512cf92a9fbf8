"""`python -m bytewright.pickle inspect FILE` and `convert IN OUT`.

`inspect` shows the tree of a bytewright.pickle record stream or a standard pickle (values
with their offsets, types and shared references; `--view hex` for the annotated bytes,
`--html OUT` for the browser view). For a standard pickle it also lists what it would
import and call, without running it, and says whether `loads_pickle` would accept it.
`convert` rewrites an accepted pickle into the bytewright format.
"""

import argparse
import collections
import pickletools
import sys
from typing import Any

from bytewright.pickle import UnpicklingError, dumps, loads_pickle
from bytewright.pickle._pickle_reader import check_pickle

_CALLS = {"REDUCE", "NEWOBJ", "NEWOBJ_EX", "INST", "OBJ", "BUILD"}
_STRINGS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING"}


def describe(data: bytes) -> dict[str, Any]:
    """Globals and call opcodes of a pickle, found by parsing only (nothing runs)."""
    imports: list[str] = []
    calls: collections.Counter[str] = collections.Counter()
    protocol: Any = 0
    error = None
    memo: dict[int, Any] = {}
    recent: list[Any] = []  # the last values pushed, enough to name STACK_GLOBAL
    arg: Any
    try:
        for op, arg, _pos in pickletools.genops(data):
            name = op.name
            value: Any = None
            if name == "PROTO":
                protocol = arg
            elif name in ("GLOBAL", "INST"):
                imports.append(str(arg).replace(" ", "."))
            elif name == "STACK_GLOBAL":
                module, attr = recent[-2:] if len(recent) >= 2 else (None, None)
                imports.append(f"{module}.{attr}" if module and attr else "<computed>")
            if name in _CALLS:
                calls[name] += 1
            if name in _STRINGS:
                value = arg
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                value = memo.get(arg)
            if name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = recent[-1] if recent else None
            elif name == "MEMOIZE":
                memo[len(memo)] = recent[-1] if recent else None
            elif name not in ("FRAME", "PROTO", "MARK", "STOP"):
                recent = [*recent[-1:], value]
    except Exception as exc:  # pickletools reports malformed input as various errors
        error = f"{type(exc).__name__}: {exc}"
    return {
        "protocol": protocol,
        "imports": list(dict.fromkeys(imports)),
        "calls": dict(calls),
        "error": error,
    }


def _inspect(path: str, args: argparse.Namespace) -> int:
    from bytewright._explain._cli import emit
    from bytewright.pickle._inspect import explain_pickle, explain_record, is_record

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    view = {
        "view": args.view,
        "max_depth": args.max_depth,
        "path": args.path,
        "max_items": args.max_items,
        "color": args.color,
        "html": args.html,
    }
    if is_record(data):
        print(f"{path}: {len(data)} bytes of bytewright.pickle")
        return emit(explain_record(data), **view)
    status = emit(explain_pickle(data), **view)
    if status == 2:
        return status
    info = describe(data)
    print(f"{path}: {len(data)} bytes, pickle protocol {info['protocol']}")
    print("imports:" if info["imports"] else "imports: none")
    for name in info["imports"]:
        print(f"  {name}")
    calls = ", ".join(f"{k} x{v}" for k, v in sorted(info["calls"].items()))
    print(f"calls: {calls or 'none'}")
    if info["error"]:
        print(f"malformed: {info['error']}")
    try:
        reason = check_pickle(data)
    except UnpicklingError as exc:
        reason = str(exc)
    if reason is None:
        print("loads_pickle: accepted")
        return 0
    print(f"loads_pickle: rejected: {reason}")
    return 1


def _convert(src: str, dst: str) -> int:
    with open(src, "rb") as f:
        data = f.read()
    try:
        value = loads_pickle(data)
    except UnpicklingError as exc:
        print(f"{src}: rejected: {exc}", file=sys.stderr)
        return 1
    out = dumps(value)
    with open(dst, "wb") as f:
        f.write(out)
    print(f"{src} -> {dst}: {len(data)} bytes of pickle, {len(out)} bytes of bytewright.pickle")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bytewright.pickle", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "inspect", help="show a pickle's values and what a standard pickle would import and call"
    )
    p.add_argument("file")
    p.add_argument("--view", choices=("tree", "hex"), default="tree")
    p.add_argument("--max-depth", type=int, default=None, help="show nodes down to this depth")
    p.add_argument("--path", default=None, help="show only this subtree, e.g. 'records[0].body'")
    p.add_argument("--max-items", type=int, default=8, help="items shown before eliding")
    p.add_argument("--html", metavar="OUT", default=None, help="also write the browser view here")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p = sub.add_parser("convert", help="rewrite an accepted pickle as bytewright.pickle")
    p.add_argument("src")
    p.add_argument("dst")
    args = parser.parse_args(argv)
    if args.command == "inspect":
        return _inspect(args.file, args)
    return _convert(args.src, args.dst)


if __name__ == "__main__":
    from bytewright._explain._cli import run

    sys.exit(run(main))
