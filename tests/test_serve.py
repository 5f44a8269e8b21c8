"""``make run``'s supervisor: what its web server watches, and what that costs idle (issue 30)."""

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claimgraph_site.lib import serve
from tests.processes import free_port

ROOT = serve.ROOT


def _options(**overrides) -> argparse.Namespace:
    return argparse.Namespace(**{"port": 8000, "demo": True, "reload": True, **overrides})


def _web(**overrides) -> list[str]:
    (web,) = [c.argv for c in serve.services(_options(**overrides)) if c.name == "web server"]
    return web


def _values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv) if word == flag]


def test_the_reloader_watches_the_projects_own_folders_only():
    web = _web()
    assert "--reload" in web
    watched = [Path(folder) for folder in _values(web, "--reload-dir")]
    assert watched == [ROOT / name for name in serve.WATCHED_DIRS]
    assert all(folder.is_dir() for folder in watched)
    # Never the checkout itself (which holds .venv/ and var/), nor anything in them.
    assert ROOT not in watched
    assert not any(part in (".venv", "var", "tests") for f in watched for part in f.parts)
    assert _values(web, "--reload-include") == ["*.py", "*.html"]


def test_every_folder_of_application_code_is_watched():
    """A new package would otherwise be served stale after an edit."""
    code = {
        path.parent.name
        for path in ROOT.glob("*/__init__.py")
        if path.parent.name not in ("tests", "bench")
    }
    assert code <= set(serve.WATCHED_DIRS)


def test_without_reload_nothing_is_watched():
    web = _web(reload=False)
    assert not [word for word in web if word.startswith("--reload")]


def test_uvicorn_is_told_of_changes_by_the_kernel_not_by_polling():
    from uvicorn.supervisors import ChangeReload

    assert ChangeReload.__name__ == "WatchFilesReload"


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_idle_reloader_costs_almost_nothing(tmp_path):
    """The reloader process itself, idle for 4 s: StatReload over .venv/ took 50-90% of a core."""
    web = _web(port=free_port())
    log = tmp_path / "uvicorn.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            web, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 60
        while "Started reloader process" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        time.sleep(2)  # its first scan, if it polls
        before, start = _cpu_seconds(process.pid), time.monotonic()
        time.sleep(4)
        used = _cpu_seconds(process.pid) - before
        share = used / (time.monotonic() - start)
        assert "WatchFiles" in log.read_text()
        assert share < 0.05, f"the idle reloader used {share:.0%} of a core"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# Runs `make run`'s own recipe with a stand-in for the services (PY names this
# script): the supervisor's signal handling and exit are the real ones.
STAND_IN = """
import signal, sys
from claimgraph_site.lib import serve

SERVICE = (
    "import signal, sys, time\\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\\n"
    "print('serving', flush=True)\\n"
    "time.sleep(120)\\n"
)
serve.steps = lambda options: []
serve.services = lambda options: [serve.Command("web server", [sys.executable, "-c", SERVICE])]
sys.exit(serve.main([word for word in sys.argv[3:]]))
"""


@pytest.mark.parametrize("to", ["the group", "the supervisor"])
def test_a_clean_stop_under_make_is_not_reported_as_terminated(tmp_path, to):
    stand_in = tmp_path / "stand_in.py"
    stand_in.write_text(STAND_IN)
    log = tmp_path / "make.log"
    environment = {**os.environ, "DATABASE_URL": "postgresql://unused@127.0.0.1:1/unused"}
    environment["PYTHONPATH"] = str(ROOT)
    with log.open("w") as output:
        make = subprocess.Popen(
            ["make", "-C", str(ROOT), "run", f"PY={sys.executable} {stand_in}", "STAMP=", "PORT=1"],
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while "serving" not in log.read_text():
            assert make.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        if to == "the group":
            os.killpg(make.pid, signal.SIGTERM)
        else:
            supervisor = subprocess.run(
                ["pgrep", "-P", str(make.pid), "-f", str(stand_in)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()[0]
            os.kill(int(supervisor), signal.SIGTERM)
        status = make.wait(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(make.pid, signal.SIGKILL)
    said = log.read_text()
    assert "***" not in said and "Terminated" not in said, said
    # Signalled itself, make ends by the signal (the shell sees it); otherwise cleanly.
    assert status == (-signal.SIGTERM if to == "the group" else 0), said
