"""Real worker processes started at the same moment (for cross-process tests).

A worker script prints ``ready`` once it is connected and waits for a line on stdin; the
test starts every worker, waits until all are ready, then releases them together.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence


def run_together(argvs: Sequence[Sequence[str]], timeout: float = 120) -> list[str]:
    """Run ``python -c`` workers (one argv each, script first) together; their stdouts.

    Every worker must exit 0 (the assertion shows its stderr); none is left running.
    """
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    try:
        for proc in procs:  # every worker connected: start them together
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    return [out for out, _ in outputs]
