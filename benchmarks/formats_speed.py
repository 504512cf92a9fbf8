"""Decode speed of bytewright.formats against the reference implementations.

    .venv/bin/python benchmarks/formats_speed.py

DNS: ``dns.Message.unpack`` vs ``dnslib.DNSRecord.parse`` on the same packets.
MessagePack: ``formats.msgpack.unpackb`` vs the ``msgpack`` C extension on the same
documents. Reports the best of several rounds of process CPU time per packet or document.
A measurement only: nothing here is asserted.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import dnslib
import msgpack
from bytewright.formats import dns
from bytewright.formats import msgpack as mp
from dnslib import AAAA, CNAME, MX, NS, QTYPE, RR, SOA, SRV, TXT, A, DNSRecord


def best(fn: Callable[[Any], Any], items: list[Any], rounds: int = 7) -> float:
    """Best per-item CPU seconds over ``rounds`` passes (each pass at least 0.1 s)."""
    reps = 1
    while True:
        t = time.process_time()
        for _ in range(reps):
            for x in items:
                fn(x)
        if time.process_time() - t > 0.1:
            break
        reps *= 2
    times = []
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(reps):
            for x in items:
                fn(x)
        times.append((time.process_time() - t) / (reps * len(items)))
    return min(times)


def dns_packets() -> list[bytes]:
    out = [DNSRecord.question("www.example.com", "A").pack()]
    q = DNSRecord.question("example.com", "A")
    r = q.reply()
    r.add_answer(RR("example.com", QTYPE.A, rdata=A("93.184.216.34"), ttl=3600))
    r.add_answer(RR("example.com", QTYPE.AAAA, rdata=AAAA("2606:2800:220:1::248"), ttl=60))
    r.add_answer(RR("www.example.com", QTYPE.CNAME, rdata=CNAME("example.com")))
    r.add_answer(RR("example.com", QTYPE.MX, rdata=MX("mail.example.com", 10)))
    r.add_answer(RR("example.com", QTYPE.TXT, rdata=TXT(["v=spf1 -all"])))
    r.add_answer(RR("_sip._tcp.example.com", QTYPE.SRV, rdata=SRV(1, 2, 5060, "sip.example.com")))
    r.add_auth(RR("example.com", QTYPE.NS, rdata=NS("a.iana-servers.net")))
    r.add_auth(
        RR("example.com", QTYPE.SOA, rdata=SOA("ns.icann.org", "noc.icann.org", (1, 2, 3, 4, 5)))
    )
    r.add_ar(RR("a.iana-servers.net", QTYPE.A, rdata=A("199.43.135.53")))
    out.append(r.pack())
    rnd = random.Random(1)
    for _ in range(8):
        q = DNSRecord.question(f"host{rnd.randrange(100)}.example.org", "A")
        r = q.reply()
        for i in range(rnd.randint(1, 6)):
            r.add_answer(RR(q.q.qname, QTYPE.A, rdata=A(f"10.0.{i}.{rnd.randrange(256)}")))
        out.append(r.pack())
    return out


def msgpack_docs() -> list[bytes]:
    rnd = random.Random(2)

    def value(depth: int) -> Any:
        k = rnd.randrange(9 if depth < 3 else 6)
        if k == 0:
            return rnd.randint(-(2**40), 2**40)
        if k == 1:
            return rnd.randrange(100)
        if k == 2:
            return rnd.random()
        if k == 3:
            return "".join(rnd.choices("abcdefghij", k=rnd.randint(0, 40)))
        if k == 4:
            return rnd.choice([None, True, False])
        if k == 5:
            return rnd.randbytes(rnd.randint(0, 30))
        if k in (6, 7):
            return {f"key{i}": value(depth + 1) for i in range(rnd.randint(0, 8))}
        return [value(depth + 1) for _ in range(rnd.randint(0, 8))]

    docs = [msgpack.packb({f"k{i}": value(0) for i in range(10)}) for _ in range(30)]
    docs.append(msgpack.packb(list(range(1000))))
    docs.append(msgpack.packb([{"id": i, "name": f"user{i}", "ok": True} for i in range(100)]))
    return docs


def main() -> None:
    pkts = dns_packets()
    for p in pkts:  # same answers before timing
        assert dns.Message.unpack(p).pack() == p
    ours = best(dns.Message.unpack, pkts)
    theirs = best(DNSRecord.parse, pkts)
    print(f"DNS decode ({len(pkts)} packets, mean {sum(map(len, pkts)) // len(pkts)} B):")
    print(f"  bytewright {ours * 1e6:8.2f} us/packet")
    print(
        f"  dnslib     {theirs * 1e6:8.2f} us/packet   -> bytewright is "
        f"{theirs / ours:.1f}x faster (dnslib {dnslib.version})"
    )

    docs = msgpack_docs()
    for d in docs:
        assert mp.unpackb(d) == msgpack.unpackb(d, strict_map_key=False)
    ours = best(mp.unpackb, docs)
    theirs = best(lambda d: msgpack.unpackb(d, strict_map_key=False), docs)
    print(f"MessagePack decode ({len(docs)} documents, mean {sum(map(len, docs)) // len(docs)} B):")
    print(f"  bytewright {ours * 1e6:8.2f} us/doc")
    print(
        f"  msgpack C  {theirs * 1e6:8.2f} us/doc   -> bytewright takes {ours / theirs:.2f}x "
        "msgpack's time (target: at most 3x)"
    )
    declared = best(mp.unpackb_declared, docs)
    print(
        f"  declared-schema path (unpackb_declared): {declared * 1e6:.2f} us/doc, "
        f"{declared / theirs:.1f}x msgpack C"
    )


if __name__ == "__main__":
    main()
