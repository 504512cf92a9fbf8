"""Deliberately wrong calls: mypy must report them (checked by test_typing.py)."""

import bytewright as bw


class Point(bw.Struct):
    x: bw.I16
    y: bw.I16


Point(x="one", y=2)  # wrong argument type
Point(x=1, y=2, z=3)  # unknown keyword
Point(1, 2)  # positional arguments
