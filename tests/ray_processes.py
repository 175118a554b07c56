"""Helpers of the tests that start their own Ray nodes with `ray start`: free ports, and finding and ending only
that node's processes (never `ray stop`, which would stop every Ray on the machine)."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path
from typing import Callable


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 now."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process we can read (Linux /proc)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            out[int(entry.name)] = (ppid, cmdline)
    return out


def alive(pid: int) -> bool:
    """Running (not exited, not a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def matching(predicate: Callable[[str], bool], procs: dict[int, tuple[int, str]] | None = None) -> set[int]:
    """The processes (other than this one) whose command line satisfies ``predicate``, and all their descendants.
    ``procs``: a :func:`processes` snapshot (default: a new one)."""
    procs = processes() if procs is None else procs
    found = {pid for pid, (_, cmd) in procs.items() if predicate(cmd) and pid != os.getpid()}
    grew = True
    while grew:
        children = {pid for pid, (ppid, _) in procs.items() if ppid in found} - found
        grew, found = bool(children), found | children
    return found


def end(pids: set[int], signals=((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0))) -> set[int]:
    """Send each signal in turn to ``pids`` until none is alive; return those still alive at the end."""
    for sig, wait in signals:
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(alive(pid) for pid in pids):
            time.sleep(0.1)
        pids = {pid for pid in pids if alive(pid)}
        if not pids:
            break
    return pids
