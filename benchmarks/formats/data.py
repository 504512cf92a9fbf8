"""Part F's inputs: DNS packets (built with dnslib) and MessagePack documents (msgpack)."""

from __future__ import annotations

import random
from typing import Any

from benchmarks.harness import need


def dns_packets() -> list[bytes]:
    """A query, a response with one record of each common type, and eight random replies."""
    d = need("dnslib")
    out = [d.DNSRecord.question("www.example.com", "A").pack()]
    r = d.DNSRecord.question("example.com", "A").reply()
    answers = [
        ("example.com", "A", d.A("93.184.216.34")),
        ("example.com", "AAAA", d.AAAA("2606:2800:220:1::248")),
        ("www.example.com", "CNAME", d.CNAME("example.com")),
        ("example.com", "MX", d.MX("mail.example.com", 10)),
        ("example.com", "TXT", d.TXT(["v=spf1 -all"])),
        ("_sip._tcp.example.com", "SRV", d.SRV(1, 2, 5060, "sip.example.com")),
    ]
    for i, (name, kind, rdata) in enumerate(answers):
        ttl = {0: 3600, 1: 60}.get(i, 0)
        r.add_answer(
            d.RR(name, getattr(d.QTYPE, kind), rdata=rdata, **({"ttl": ttl} if ttl else {}))
        )
    r.add_auth(d.RR("example.com", d.QTYPE.NS, rdata=d.NS("a.iana-servers.net")))
    soa = d.SOA("ns.icann.org", "noc.icann.org", (1, 2, 3, 4, 5))
    r.add_auth(d.RR("example.com", d.QTYPE.SOA, rdata=soa))
    r.add_ar(d.RR("a.iana-servers.net", d.QTYPE.A, rdata=d.A("199.43.135.53")))
    out.append(r.pack())
    rnd = random.Random(1)
    for _ in range(8):
        q = d.DNSRecord.question(f"host{rnd.randrange(100)}.example.org", "A")
        r = q.reply()
        for i in range(rnd.randint(1, 6)):
            r.add_answer(d.RR(q.q.qname, d.QTYPE.A, rdata=d.A(f"10.0.{i}.{rnd.randrange(256)}")))
        out.append(r.pack())
    return out


def msgpack_docs() -> list[bytes]:
    """30 random nested documents, 1000 ints, and 100 small records."""
    packb = need("msgpack").packb
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

    docs = [packb({f"k{i}": value(0) for i in range(10)}) for _ in range(30)]
    docs.append(packb(list(range(1000))))
    docs.append(packb([{"id": i, "name": f"user{i}", "ok": True} for i in range(100)]))
    return docs
