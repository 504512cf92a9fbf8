import bytewright


def test_version_matches_native() -> None:
    assert bytewright.__version__ == "0.1.0"
