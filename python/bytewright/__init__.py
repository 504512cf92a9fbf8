"""bytewright: declarative binary codecs and safe pickling, with a Rust core."""

from bytewright._native import __version__

__all__ = ["__version__"]
