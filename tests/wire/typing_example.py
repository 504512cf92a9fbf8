"""A typed example checked by mypy in test_typing.py (not collected by pytest)."""

import bytewright as bw


class Point(bw.Struct, byteorder="little"):
    x: bw.I16
    y: bw.I16


class Shape(bw.Struct):
    name_len: bw.U8 = bw.derived()
    name: str = bw.field(len="name_len")
    count: bw.U16 = bw.derived()
    points: list[Point] = bw.field(count="count")
    closed: bw.Bool = False
    scale: bw.F32 = 1.0


def build() -> bytes:
    s = Shape(name="tri", points=[Point(x=1, y=2), Point(x=-1, y=0)])
    data: bytes = s.pack()
    back: Shape = Shape.unpack(data)
    obj, end = Shape.unpack_from(data)
    n: int = back.points[0].x + end
    ok: bool = back.closed
    f: float = back.scale
    name: str = obj.name
    del n, ok, f, name
    buf = bytearray(64)
    end2: int = s.pack_into(buf, 4)
    del end2
    codec: bw.Codec = bw.compile(Shape, limits=bw.Limits(max_count=10))
    del codec
    return data
