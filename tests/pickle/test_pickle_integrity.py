"""HMAC-SHA256 signing: verified before decoding, tampering always detected."""

import hashlib
import hmac as std_hmac

import pytest
from bytewright import pickle

KEY = b"secret key"
VALUE = {"user": "ada", "roles": ["admin"], "n": 12345, "blob": b"\x00" * 10}


def test_signed_round_trip_and_tag_is_stdlib_hmac():
    data = pickle.dumps(VALUE, hmac_key=KEY)
    assert pickle.loads(data, hmac_key=KEY) == VALUE
    unsigned = pickle.dumps(VALUE)
    assert len(data) == len(unsigned) + 32
    assert data[-32:] == std_hmac.new(KEY, data[:-32], hashlib.sha256).digest()


def test_every_flipped_byte_is_an_integrity_error():
    data = pickle.dumps(VALUE, hmac_key=KEY)
    for i in range(len(data)):
        tampered = bytearray(data)
        tampered[i] ^= 0x01
        with pytest.raises(pickle.UnpicklingError) as info:
            pickle.loads(bytes(tampered), hmac_key=KEY)
        # Header bytes (magic, version, flags, length) fail framing before the tag check.
        if i >= 5:
            assert isinstance(info.value, pickle.IntegrityError), i


def test_wrong_key_missing_key_and_unexpected_key():
    data = pickle.dumps(VALUE, hmac_key=KEY)
    with pytest.raises(pickle.IntegrityError, match="HMAC check failed"):
        pickle.loads(data, hmac_key=b"other")
    with pytest.raises(pickle.IntegrityError, match="signed"):
        pickle.loads(data)
    with pytest.raises(pickle.IntegrityError, match="not signed"):
        pickle.loads(pickle.dumps(VALUE), hmac_key=KEY)


def test_stripping_the_signature_is_detected():
    data = pickle.dumps(VALUE, hmac_key=KEY)
    stripped = data[:3] + b"\x00" + data[4:-32]
    with pytest.raises(pickle.IntegrityError):
        pickle.loads(stripped, hmac_key=KEY)


def test_key_types():
    data = pickle.dumps(1, hmac_key=bytearray(KEY))
    assert pickle.loads(data, hmac_key=memoryview(KEY)) == 1
    with pytest.raises(TypeError):
        pickle.dumps(1, hmac_key="text")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        pickle.dumps(1, hmac_key=b"")


def test_large_signed_payload():
    value = [b"x" * 100_000, "y" * 100_000]
    data = pickle.dumps(value, hmac_key=KEY)
    assert pickle.loads(data, hmac_key=KEY) == value
    tampered = data[:1000] + bytes([data[1000] ^ 1]) + data[1001:]
    with pytest.raises(pickle.IntegrityError):
        pickle.loads(tampered, hmac_key=KEY)
