"""Expression strings (Python syntax over earlier fields) -> the core's JSON form.

Parsed once at class creation; the Rust core resolves names and evaluates them natively.
"""

from __future__ import annotations

import ast

from bytewright.errors import SchemaError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse_expr"]

_BIN = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}
_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_UN = {ast.USub: "-", ast.Invert: "~", ast.Not: "not"}


def parse_expr(source: str, where: str) -> list[Any]:
    """Parses ``source``; ``where`` names the field for error messages."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as e:
        raise SchemaError(f"{where}: invalid expression {source!r}: {e.msg}") from None
    return _convert(tree.body, source, where)


def _convert(node: ast.expr, source: str, where: str) -> list[Any]:
    def sub(n: ast.expr) -> list[Any]:
        return _convert(n, source, where)

    if isinstance(node, ast.Name):
        return ["name", node.id]
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            return ["int", int(v)]
        if isinstance(v, int):
            if not -(2**127) <= v < 2**127:
                raise SchemaError(f"{where}: constant {v} in {source!r} is too large")
            # JSON numbers are exact only within the i64/u64 range: send larger ones as text.
            return ["int", v if -(2**63) <= v < 2**64 else str(v)]
        if isinstance(v, bytes):
            return ["bytes", list(v)]
    elif isinstance(node, ast.BinOp):
        op = _BIN.get(type(node.op))
        if op is not None:
            return ["bin", op, sub(node.left), sub(node.right)]
        if isinstance(node.op, ast.Div):
            raise SchemaError(f"{where}: use '//' for integer division in {source!r}")
    elif isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.UAdd):
            return sub(node.operand)
        return ["un", _UN[type(node.op)], sub(node.operand)]
    elif isinstance(node, ast.BoolOp):
        kind = "and" if isinstance(node.op, ast.And) else "or"
        out = sub(node.values[0])
        for operand in node.values[1:]:
            out = [kind, out, sub(operand)]
        return out
    elif isinstance(node, ast.Compare):
        parts: list[list[Any]] = []
        left = node.left
        for cmp, right in zip(node.ops, node.comparators, strict=True):
            sym = _CMP.get(type(cmp))
            if sym is None:
                break
            parts.append(["bin", sym, sub(left), sub(right)])
            left = right
        else:
            out = parts[0]
            for p in parts[1:]:
                out = ["and", out, p]
            return out
    elif isinstance(node, ast.IfExp):
        return ["if", sub(node.test), sub(node.body), sub(node.orelse)]
    raise SchemaError(
        f"{where}: unsupported syntax {type(node).__name__} in {source!r} "
        "(expressions use field names, int and bytes constants, + - * // % << >> & | ^ ~, "
        "comparisons, and/or/not, and x if c else y)"
    )
