"""The environment table: CPU, cores, OS, Python and every package version."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata

from benchmarks.tables import Table

PACKAGES = (
    "bytewright",
    "construct",
    "dataclasses-struct",
    "rustruct",
    "pysafe-pickle",
    "numpy",
    "rich",
    "matplotlib",
)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def os_description() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            fields = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        pretty = fields.get("PRETTY_NAME", "").strip('"')
    except OSError:
        pretty = ""
    return f"{pretty} ({platform.system()} {platform.release()}, {platform.machine()})".strip()


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def load_average() -> str:
    """The 1/5/15-minute load averages: other work on the machine shows up as noise."""
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def environment_table(profile: str, started: str) -> Table:
    table = Table("Environment", ["Component", "Value"])
    table.add("Date (UTC)", started)
    table.add("CPU", cpu_model())
    table.add("Cores", f"{os.cpu_count()} logical")
    table.add("Operating system", os_description())
    table.add("Python", f"{platform.python_implementation()} {sys.version.split()[0]}")
    table.add("Standard-library baselines", "struct, ctypes and pickle of that Python")
    for name in PACKAGES:
        table.add(name, package_version(name))
    table.add("Profile", profile)
    table.add("Load average at start (1/5/15 min)", load_average())
    return table
