"""Real formats declared with the bytewright vocabulary.

Each module is a worked example and a cross-checked codec: ``png`` (chunks and files),
``pcap`` (capture files, and ``read`` for pcap and pcapng), ``pcapng`` (its blocks),
``ethernet`` (Ethernet II, VLAN tags, Linux cooked capture), ``ip`` (IPv4 with fragments,
UDP, TCP, ICMP and their checksums), ``ipv6`` (IPv6 with extension headers), ``dns``
(messages with name compression) and ``msgpack`` (MessagePack values).
"""

__all__ = ["dns", "ethernet", "ip", "ipv6", "msgpack", "pcap", "pcapng", "png"]
