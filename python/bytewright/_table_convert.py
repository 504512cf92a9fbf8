"""``bw.Table`` to pyarrow, pandas, polars and NumPy. Each conversion imports only its own
library (pandas uses pyarrow when it is installed, and works without it)."""

from __future__ import annotations

from importlib import import_module
from typing import Any


def to_arrow(table: Any) -> Any:
    pa: Any = import_module("pyarrow")
    return pa.table(table)


def to_polars(table: Any) -> Any:
    pl: Any = import_module("polars")
    return pl.DataFrame(table)


def to_numpy(table: Any) -> dict[str, Any]:
    np: Any = import_module("numpy")
    return {name: np.asarray(table[name]) for name in table.column_names}


def to_pandas(table: Any, **options: Any) -> Any:
    pd: Any = import_module("pandas")
    pa: Any
    try:
        pa = import_module("pyarrow")
    except ImportError:
        pa = None
    if pa is not None:
        return pa.table(table).to_pandas(**options)
    if options:
        raise TypeError(f"to_pandas options {sorted(options)} need pyarrow")
    columns: dict[str, Any] = {}
    for name in table.column_names:
        col = table[name]
        columns[name] = (
            col.__array__() if col.null_count == 0 else pd.array(col.to_pylist(), dtype=object)
        )
    return pd.DataFrame(columns)
