"""Captures real kernel traffic in a private network namespace, for tests/formats.

    python tests/formats/captures/generate.py OUTDIR

Re-runs itself under ``unshare -n`` (root, or a user namespace, is needed), so only the
namespace's own loopback interface exists: nothing leaves the machine. In it, tcpdump
writes a nanosecond pcap and dumpcap (when installed) a pcapng of two interfaces (``lo``,
Ethernet, and ``any``, Linux cooked capture) while the script sends, over 127.0.0.1 and ::1:

- UDP datagrams: plain, with DSCP/ECN, with IPv4 options (record route, router alert),
  with a checksum of 0 (``SO_NO_CHECK``), larger than the 1280-byte MTU (IPv4 fragments
  and IPv6 fragment headers), and to a closed port (ICMP and ICMPv6 port unreachable);
- ICMP and ICMPv6 echo, one of them fragmented;
- IPv6 hop-by-hop and destination options (``IPV6_HOPOPTS``, ``IPV6_DSTOPTS``);
- TCP connections over both (SYNs with MSS, SACK permitted, timestamps, window scale);
- frames the kernel does not send on its own, built by scapy and injected through a
  packet socket: 802.1Q and QinQ VLAN tags, Ethernet padding plus a frame check sequence,
  an IPv6 routing header, and an IPv4 packet whose total_length is 0.

Loopback checksums are offloaded (CHECKSUM_PARTIAL), so many TCP and UDP checksums in the
captures are "wrong", as in any capture of a host's own traffic. A second tcpdump with a
200-byte snap length then records TCP transfers with the loopback's MTU and GSO size
raised, so its segments (up to 64 KiB) are cut short by the capture.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

INSIDE = "BYTEWRIGHT_CAPTURE_NAMESPACE"
# -Z root: keep writing as the caller (tcpdump drops to its own user by default);
# --immediate-mode: with a GSO size above 64 KiB, the buffered mode captures nothing.
TCPDUMP = ["tcpdump", "-i", "lo", "-U", "--immediate-mode", "-Z", "root"]


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def _start(cmd: list[str], ready: str) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert p.stderr is not None
    deadline = time.monotonic() + 10
    seen = b""
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        seen += line
        if ready.encode() in line:
            threading.Thread(target=p.stderr.read, daemon=True).start()
            return p
        if not line and p.poll() is not None:
            break
    p.kill()
    raise RuntimeError(f"{cmd[0]} did not start: {seen.decode(errors='replace')}")


def _stop(p: subprocess.Popen[bytes]) -> None:
    time.sleep(0.5)  # let the last packets reach the capture
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def _udp_server(family: int, addr: str) -> tuple[socket.socket, int]:
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.bind((addr, 0))
    s.settimeout(2)
    return s, s.getsockname()[1]


def _closed_port(family: int, addr: str) -> int:
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.bind((addr, 0))
    port = s.getsockname()[1]
    s.close()
    return int(port)


def _udp_traffic(family: int, addr: str) -> None:
    server, port = _udp_server(family, addr)
    v6 = family == socket.AF_INET6

    def send(data: bytes, **opts: tuple[int, int, object]) -> None:
        c = socket.socket(family, socket.SOCK_DGRAM)
        for level, name, value in opts.values():
            c.setsockopt(level, name, value)  # type: ignore[call-overload]
        c.sendto(data, (addr, port))
        c.close()
        server.recvfrom(65535)

    send(b"plain datagram")
    if v6:
        send(b"ecn ect(1) and dscp 46", tc=(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 0xB9))
        # Hop-by-hop router alert (RFC 2711) and destination PadN options.
        send(
            b"hop-by-hop options",
            hop=(socket.IPPROTO_IPV6, 54, b"\x00\x00\x05\x02\x00\x00\x01\x00"),
        )
        send(
            b"destination options",
            dst=(socket.IPPROTO_IPV6, 59, b"\x00\x00\x01\x04\x00\x00\x00\x00"),
        )
        send(
            bytes(range(256)) * 12,
            pmtu=(socket.IPPROTO_IPV6, 23, 0),  # IPV6_MTU_DISCOVER = IPV6_PMTUDISC_DONT
        )
    else:
        send(b"ecn ect(0) and dscp 46", tos=(socket.IPPROTO_IP, socket.IP_TOS, 0xBA))
        send(b"ecn ce", tos=(socket.IPPROTO_IP, socket.IP_TOS, 0x03))
        send(b"no checksum", nocheck=(socket.SOL_SOCKET, 11, 1))  # SO_NO_CHECK
        # Record route with two free slots, then a router alert.
        send(
            b"record route",
            opt=(socket.IPPROTO_IP, socket.IP_OPTIONS, b"\x07\x0b\x04" + bytes(8) + b"\x00"),
        )
        send(b"router alert", opt=(socket.IPPROTO_IP, socket.IP_OPTIONS, b"\x94\x04\x00\x00"))
        send(
            bytes(range(256)) * 12,
            pmtu=(socket.IPPROTO_IP, 10, 0),  # IP_MTU_DISCOVER = IP_PMTUDISC_DONT
        )
    server.close()
    # A datagram to a closed port: the kernel answers with port unreachable.
    c = socket.socket(family, socket.SOCK_DGRAM)
    c.sendto(b"anyone there?", (addr, _closed_port(family, addr)))
    time.sleep(0.2)
    c.close()


def _ping(family: int, addr: str, size: int) -> None:
    proto = socket.IPPROTO_ICMPV6 if family == socket.AF_INET6 else socket.IPPROTO_ICMP
    s = socket.socket(family, socket.SOCK_RAW, proto)
    s.settimeout(2)
    kind = 128 if family == socket.AF_INET6 else 8
    body = bytes([kind, 0, 0, 0, 0x12, 0x34, 0, 1]) + bytes(i & 0xFF for i in range(size))
    if family == socket.AF_INET:
        total = sum(int.from_bytes(body[i : i + 2], "big") for i in range(0, len(body), 2))
        while total >> 16:
            total = (total & 0xFFFF) + (total >> 16)
        body = body[:2] + (~total & 0xFFFF).to_bytes(2, "big") + body[4:]
    s.sendto(body, (addr, 0))
    time.sleep(0.2)
    s.close()


def _tcp_traffic(family: int, addr: str, payload: bytes) -> None:
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    got = bytearray()

    def serve() -> None:
        conn, _ = srv.accept()
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            got.extend(chunk)
        conn.sendall(b"bye")
        conn.close()

    t = threading.Thread(target=serve)
    t.start()
    c = socket.create_connection((addr, port))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.sendall(b"GET / HTTP/1.0\r\n\r\n")
    c.sendall(payload)
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()
    t.join(5)
    srv.close()
    assert len(got) == len(payload) + 18


def _inject_crafted() -> None:
    """Frames scapy builds, sent through a packet socket on lo (seen by every capture)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrRouting
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether

    eth = {"src": "02:00:00:00:00:01", "dst": "02:00:00:00:00:02"}
    frames = [
        Ether(**eth)
        / Dot1Q(vlan=100, prio=5)
        / IP(src="127.0.0.1", dst="127.0.0.2")
        / UDP(sport=4000, dport=4001)
        / b"one vlan tag",
        Ether(**eth)
        / Dot1AD(vlan=200)
        / Dot1Q(vlan=30, dei=1)
        / IPv6(src="::1", dst="::1")
        / UDP(sport=4000, dport=4002)
        / b"qinq",
        IPv6(src="::1", dst="::1")
        / IPv6ExtHdrRouting(addresses=["::1", "::1"], segleft=0)
        / UDP(sport=4000, dport=4003)
        / b"routing header",
    ]
    wire = [bytes(f) for f in frames[:2]]
    wire.append(bytes(Ether(**eth) / frames[2]))
    # A short packet padded to the 60-byte minimum, plus a 4-byte frame check sequence.
    short = bytes(Ether(**eth) / IP(src="127.0.0.1", dst="127.0.0.2") / UDP(sport=1, dport=2))
    wire.append(short + bytes(60 - len(short)) + b"\xde\xad\xbe\xef")
    # An IPv4 packet with total_length 0, as segmentation offload writes it.
    tso = bytearray(
        bytes(
            Ether(**eth)
            / IP(src="127.0.0.1", dst="127.0.0.2")
            / UDP(sport=5, dport=6)
            / b"offloaded"
        )
    )
    tso[16:18] = b"\0\0"
    wire.append(bytes(tso))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind(("lo", 0))
    for w in wire:
        s.send(w)
    s.close()


def _inside(out: Path) -> None:
    _sh("ip", "link", "set", "lo", "up")
    _sh("ip", "link", "set", "lo", "mtu", "1280")
    caps: list[subprocess.Popen[bytes]] = []
    try:
        caps.append(
            _start(
                [*TCPDUMP, "--time-stamp-precision=nano", "-w", str(out / "lo.pcap")],
                "listening on",
            )
        )
        if shutil.which("dumpcap"):
            caps.append(
                _start(["dumpcap", "-q", "-i", "lo", "-i", "any", "-w", str(out / "lo.pcapng")], "")
            )
            time.sleep(1)
        for family, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            _udp_traffic(family, addr)
            _ping(family, addr, 32)
            _ping(family, addr, 1400)
            _tcp_traffic(family, addr, b"x" * 3000)
        _inject_crafted()
    finally:
        for p in caps:
            _stop(p)
    # Large segments: raise the loopback's MTU and GSO size, capture 200 bytes of each.
    _sh("ip", "link", "set", "lo", "mtu", "65536")
    _sh("ip", "link", "set", "dev", "lo", "gso_max_size", "200000", "gro_max_size", "200000")
    big = _start([*TCPDUMP, "-s", "200", "-w", str(out / "bigtcp.pcap")], "listening on")
    try:
        _tcp_traffic(socket.AF_INET6, "::1", b"y" * 200_000)
        _tcp_traffic(socket.AF_INET, "127.0.0.1", b"z" * 100_000)
    finally:
        _stop(big)


def main() -> None:
    out = Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if os.environ.get(INSIDE) != "1":
        env = {**os.environ, INSIDE: "1"}
        subprocess.run(["unshare", "-n", sys.executable, __file__, str(out)], check=True, env=env)
        return
    _inside(out)


if __name__ == "__main__":
    main()
