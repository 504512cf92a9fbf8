"""``python -m bytewright explain`` and the views it prints: plain text when piped, color
with rich on a terminal, the failure in red with exit status 1, long lists elided,
``--max-depth``, ``--path``, ``--view hex`` and ``--html``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import bytewright as bw
import pytest
from bytewright._explain._cli import main
from explain_samples import Telemetry, tcp_capture, telemetry

HERE = Path(__file__).resolve().parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(*args: str, cwd: Path = HERE) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(HERE), COLUMNS="160")
    return subprocess.run(
        [sys.executable, "-m", "bytewright", "explain", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.fixture
def frame(tmp_path: Path) -> Path:
    path = tmp_path / "frame.bin"
    path.write_bytes(telemetry())
    return path


def test_tree_is_plain_text_when_piped(frame: Path) -> None:
    done = run("explain_samples:Telemetry", str(frame))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert not ANSI.search(out)
    assert out == bw.explain(Telemetry, telemetry()).render() + "\n"
    lines = out.splitlines()
    assert lines[0].split() == ["offset", "size", "field", "kind", "value"]
    crc = next(line for line in lines if "crc" in line)
    assert crc.split()[:2] == ["45", "4"] and "[checksum] crc32 over the struct" in crc
    # Five readings: the first, then a count of the hidden ones, then the last (--max-items 3).
    out = run("explain_samples:Telemetry", str(frame), "--max-items", "3").stdout
    assert "… 3 more items (bytes 11..29)" in out and "─ [4]" in out and "─ [2]" not in out


def test_color_on_request_and_failure_in_red(tmp_path: Path) -> None:
    bad = bytearray(telemetry())
    bad[33] ^= 1
    path = tmp_path / "bad.bin"
    path.write_bytes(bytes(bad))
    done = run("explain_samples:Telemetry", str(path), "--color", "always")
    assert done.returncode == 1
    assert ANSI.search(done.stdout)
    red = "\x1b[1;31m"
    last = done.stdout.splitlines()[-1]
    assert last.startswith(red) and "✗ DecodeError at offset 45: crc: checksum mismatch" in last
    crc_line = next(line for line in done.stdout.splitlines() if "crc" in ANSI.sub("", line)[:40])
    assert red in crc_line  # the failed field itself is red
    plain = run("explain_samples:Telemetry", str(path)).stdout
    assert "✗ DecodeError at offset 45" in plain and not ANSI.search(plain)


def test_short_data_says_what_is_needed(tmp_path: Path) -> None:
    path = tmp_path / "short.bin"
    path.write_bytes(telemetry()[:20])
    done = run("explain_samples:Telemetry", str(path))
    assert done.returncode == 1
    assert "short data: 15 more bytes needed" in done.stdout
    assert "(rest)" in done.stdout


def test_hex_view(frame: Path) -> None:
    done = run("explain_samples:Telemetry", str(frame), "--view", "hex")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0].startswith("00000000  54 4d 10 00 05 00 02 ff  ff ff f9 01 12 00 00 03 |TM")
    assert lines[0].endswith("magic @0+2 = b'TM'")
    crc = bw.explain(Telemetry, telemetry())["crc"].value
    assert any(line.strip() == f"crc @45+4 = {crc}" for line in lines)
    # Every leaf appears once, in byte order.
    paths = [line.split("|")[-1].strip().split(" @")[0] for line in lines if " @" in line]
    leaves = [n.path for n in bw.explain(Telemetry, telemetry()).walk() if not n.children]
    assert paths == leaves


def test_max_depth_and_path(frame: Path) -> None:
    out = run("explain_samples:Telemetry", str(frame), "--max-depth", "1").stdout
    assert "readings" in out and "sensor" not in out and "… 5 more below (--max-depth)" in out
    out = run("explain_samples:Telemetry", str(frame), "--path", "readings[3]").stdout
    lines = out.splitlines()
    assert lines[1].split()[:3] == ["23", "6", "[3]"] and len(lines) == 6
    done = run("explain_samples:Telemetry", str(frame), "--path", "nope")
    assert done.returncode == 2 and "no node at 'nope'" in done.stderr


def test_offset_and_stdin(frame: Path, tmp_path: Path) -> None:
    path = tmp_path / "log.bin"
    path.write_bytes(b"\xff" * 7 + telemetry())
    out = run("explain_samples:Telemetry", str(path), "--offset", "7").stdout
    assert out.splitlines()[1].split()[:2] == ["7", "49"]
    env = dict(os.environ, PYTHONPATH=str(HERE))
    done = subprocess.run(
        [sys.executable, "-m", "bytewright", "explain", "explain_samples:Telemetry", "-"],
        input=telemetry(),
        capture_output=True,
        env=env,
        cwd=HERE,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and b"pump 3 ok" in done.stdout


def test_html_file(frame: Path, tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    done = run("explain_samples:Telemetry", str(frame), "--html", str(out))
    assert done.returncode == 0 and f"wrote {out}" in done.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and "<script>" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "http://" not in page and "https://" not in page


def test_formats(tmp_path: Path) -> None:
    cap = tmp_path / "one.pcap"
    cap.write_bytes(tcp_capture())
    done = run("--format", "pcap", str(cap), "--path", "body.records[0].data.payload.payload")
    assert done.returncode == 0, done.stderr
    assert "dst_port" in done.stdout and "GET / HTTP/1.1" in done.stdout
    from bytewright.formats import png

    pic = tmp_path / "x.png"
    pic.write_bytes(png.write([png.Chunk(type=b"IEND", data=b"")]))
    done = run("--format", "png", str(pic))
    assert done.returncode == 0 and "IEND" in done.stdout
    pic.write_bytes(b"\x89PNG\r\n\x1a\x0b")
    done = run("--format", "png", str(pic))
    assert done.returncode == 1 and "signature" in done.stdout


def test_usage_errors(frame: Path) -> None:
    assert run(str(frame)).returncode == 2  # neither MODULE:CLASS nor --format
    done = run("explain_samples:Telemetry", str(frame), "--format", "png")
    assert done.returncode == 2 and "not both" in done.stderr
    done = run("explain_samples:Nope", str(frame))
    assert done.returncode != 0 and "has no 'Nope'" in done.stderr
    done = run("explain_samples", str(frame))
    assert done.returncode != 0 and "MODULE:CLASS" in done.stderr
    done = run("explain_samples:Telemetry", str(frame) + ".missing")
    assert done.returncode == 2


def test_main_in_process(frame: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--format", "png", str(frame)]) == 1
    assert "signature" in capsys.readouterr().out
    codec_path = f"{Telemetry.__module__}:Telemetry"
    assert main(["explain", codec_path, str(frame), "--color", "never"]) == 0


@pytest.mark.parametrize("module", ["bytewright", "bytewright.pickle"])
def test_a_reader_that_stops_early_is_no_error(module: str, tmp_path: Path) -> None:
    # More output than a pipe holds, read by something that stops after a few bytes (| head).
    if module == "bytewright":
        capture = HERE.parent / "formats" / "captures" / "lo.pcap"  # 23 kB: a 2 MB hex view
        args = ["explain", "--format", "pcap", str(capture), "--view", "hex"]
    else:
        from bytewright import pickle as bwp

        big = tmp_path / "big.bw"
        big.write_bytes(bwp.dumps(list(range(20_000))))
        args = ["inspect", str(big), "--max-items", "100000"]
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=HERE,
        env=dict(os.environ, PYTHONPATH=str(HERE)),
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    from bytewright.pickle.__main__ import main as pickle_main

    missing = str(tmp_path / "nope.pkl")
    assert pickle_main(["inspect", missing]) == 2
    done = run("--format", "pcap", missing)
    assert done.returncode == 2 and "No such file" in done.stderr
