"""Real formats declared with the bytewright vocabulary.

Each module is a worked example and a cross-checked codec: ``png`` (chunks and files),
``pcap`` (capture files), ``ip`` (IPv4, UDP and TCP with their checksums), ``dns``
(messages with name compression) and ``msgpack`` (MessagePack values).
"""

__all__ = ["dns", "ip", "msgpack", "pcap", "png"]
