"""The command line of ``python -m bytewright explain`` (and the shared output of
``python -m bytewright.pickle inspect``)."""

from __future__ import annotations

import argparse
import sys

from bytewright._explain import Explained

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TextIO

__all__ = ["emit", "load_target", "main", "run"]


def run(main: Callable[[], int]) -> int:
    """Runs a command line's ``main`` and returns its exit status; a reader that stops
    reading early (``| head``) ends the output quietly instead of with a traceback."""
    import os

    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at nothing so that is quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return status


def load_target(spec: str) -> Any:
    """``MODULE:NAME`` (``NAME`` may be dotted) as the object it names: a ``bw.Struct``
    class or a ``bw.Codec``."""
    import importlib

    from bytewright._info import info_of
    from bytewright._native import Codec

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"error: {spec!r} is not MODULE:CLASS (e.g. myproto.frames:Frame)")
    sys.path.insert(0, ".")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise SystemExit(f"error: cannot import {module_name!r}: {e}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SystemExit(f"error: {module_name} has no {attr!r}") from None
    if not isinstance(obj, Codec) and info_of(obj) is None:
        raise SystemExit(f"error: {spec} is not a bw.Struct class or a bw.Codec")
    return obj


def _color(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    return stream.isatty()


def emit(
    ex: Explained,
    *,
    view: str = "tree",
    max_depth: int | None = None,
    path: str | None = None,
    max_items: int = 8,
    color: str = "auto",
    html: str | None = None,
    stream: TextIO | None = None,
) -> int:
    """Prints a view (styled by ``rich`` on a terminal, plain text otherwise), writes the
    HTML page if asked, and returns the exit status: 0 if the data decoded, else 1."""
    from bytewright._explain import _text

    out = stream if stream is not None else sys.stdout
    if path is not None and ex.find(path) is None:
        paths = [n.path for n in ex.walk() if n.path][:20]
        print(f"error: no node at {path!r}; paths start: {', '.join(paths)}", file=sys.stderr)
        return 2
    if html is not None:
        with open(html, "w", encoding="utf-8") as f:
            f.write(ex.to_html())
    if view == "tree":
        lines = _text.tree_lines(ex, max_depth=max_depth, path=path, max_items=max_items)
    else:
        lines = _text.hex_lines(ex, max_depth=max_depth, path=path)
    rich = _rich() if _color(color, out) else None
    if rich is None:
        for line in lines:
            print("".join(t for t, _ in line).rstrip(), file=out)
    else:
        console = rich.console.Console(
            file=out, force_terminal=True, highlight=False, soft_wrap=True
        )
        for line in lines:
            console.print(rich.text.Text.assemble(*line))
    if html is not None:
        print(f"wrote {html}", file=sys.stderr)
    return 0 if ex.ok else 1


def _rich() -> Any:
    try:
        import rich.console
        import rich.text
    except ImportError:  # rich is optional: plain text without it
        return None
    return rich


def build_parser() -> argparse.ArgumentParser:
    from bytewright._explain._formats import FORMATS

    parser = argparse.ArgumentParser(
        prog="python -m bytewright",
        description="Inspect binary data with bytewright schemas.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "explain",
        help="show where every field of a message sits in the bytes",
        description="Decode FILE with a bw.Struct class (MODULE:CLASS) or a bundled format "
        "(--format) and show its field tree or an annotated hex dump. Exit status 1 when "
        "the data does not decode.",
        epilog="formats: " + "; ".join(f"{k}: {v}" for k, v in FORMATS.items()),
    )
    p.add_argument("target", nargs="?", help="MODULE:CLASS, a bw.Struct class or bw.Codec")
    p.add_argument("file", help="the data file ('-' for standard input)")
    p.add_argument(
        "--format", choices=sorted(FORMATS), help="a bundled format instead of MODULE:CLASS"
    )
    p.add_argument("--offset", type=int, default=0, help="where the message starts (default 0)")
    p.add_argument("--view", choices=("tree", "hex"), default="tree")
    p.add_argument("--max-depth", type=int, default=None, help="show nodes down to this depth")
    p.add_argument("--path", default=None, help="show only this subtree, e.g. 'chunks[2]'")
    p.add_argument("--max-items", type=int, default=8, help="list items shown before eliding")
    p.add_argument("--html", metavar="OUT", default=None, help="also write the browser view here")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.target is None) == (args.format is None):
        # One positional: it is the file when --format is given.
        if args.format is None:
            parser.error("give MODULE:CLASS or --format NAME")
        parser.error("give either MODULE:CLASS or --format, not both")
    if args.file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            with open(args.file, "rb") as f:
                data = f.read()
        except OSError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if args.offset < 0 or args.offset > len(data):
        parser.error(f"--offset {args.offset} is outside the {len(data)}-byte file")
    if args.format is not None:
        from bytewright._explain._formats import explain_format

        ex = explain_format(args.format, data, offset=args.offset)
    else:
        from bytewright._explain import explain

        ex = explain(load_target(args.target), data, offset=args.offset)
    return emit(
        ex,
        view=args.view,
        max_depth=args.max_depth,
        path=args.path,
        max_items=args.max_items,
        color=args.color,
        html=args.html,
    )
