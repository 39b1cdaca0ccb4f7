"""``kts dev``: one command to a running stack with its own ZooKeeper, an admin, and a kept secret."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

from app.cli.server.embedded_zookeeper import four_letter_word, free_port
from tests.api.conftest import basic
from tests.e2e.conftest import KTS, ROOT, kts_env, wait_ready


def _start(data_dir: Path, port: int, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*KTS, "dev", "--port", str(port), "--data-dir", str(data_dir)],
        cwd=ROOT,
        env=kts_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _zookeeper_port(output: str) -> int:
    match = re.search(r"ZooKeeper: 127\.0\.0\.1:(\d+)", output)
    assert match, output
    return int(match.group(1))


def test_dev_stack_starts_serves_and_stops_zookeeper(tmp_path: Path, processes: list[subprocess.Popen[str]]) -> None:
    port = free_port()
    data_dir = tmp_path / "dev"
    process = _start(data_dir, port, KTS_ADMIN_PASSWORD="admin-pw")
    processes.append(process)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, process, timeout_s=60)
    created = httpx.post(f"{url}/v1/tokens", json={"owner": "User:joe"}, headers=basic(("admin", "admin-pw")))
    assert created.status_code == 201
    assert (data_dir / "secret.key").stat().st_mode & 0o777 == 0o600
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    zk_port = _zookeeper_port(output)
    time.sleep(0.2)
    try:
        answer = four_letter_word(zk_port)
    except OSError:
        answer = ""
    assert answer != "imok", "ZooKeeper must stop with kts dev"
    assert "admin-pw" not in output


def _modes(data_dir: Path) -> dict[str, int]:
    modes = {".": data_dir.stat().st_mode & 0o777}
    for path in data_dir.rglob("*"):
        if not path.is_symlink():
            modes[str(path.relative_to(data_dir))] = path.stat().st_mode & 0o777
    return modes


def test_the_data_dir_and_everything_in_it_is_private(tmp_path: Path, processes: list[subprocess.Popen[str]]) -> None:
    """ZooKeeper's snapshots hold the admin's SCRAM verifier: every directory 0700, every file 0600, the ones
    an older stack left world-readable included."""
    data_dir = tmp_path / "dev"
    (data_dir / "zookeeper" / "data").mkdir(parents=True)
    data_dir.chmod(0o755)
    left_behind = data_dir / "zookeeper" / "old.log"
    left_behind.write_text("from an older stack\n")
    left_behind.chmod(0o644)
    port = free_port()
    process = _start(data_dir, port, KTS_ADMIN_PASSWORD="admin-pw")
    processes.append(process)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, process, timeout_s=60)
    assert httpx.post(f"{url}/v1/tokens", json={}, headers=basic(("admin", "admin-pw"))).status_code == 201
    running = _modes(data_dir)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)

    snapshots = [name for name in _modes(data_dir) if "/version-2/" in name]
    assert any("/log." in name for name in snapshots), sorted(running)  # the positive control: ZooKeeper wrote
    for modes in (running, _modes(data_dir)):
        for name, mode in modes.items():
            expected = 0o700 if (data_dir / name).is_dir() else 0o600
            assert mode == expected, f"{name} is {oct(mode)}"


def test_generated_admin_password_is_printed_once_and_kept(
    tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    data_dir = tmp_path / "dev"
    port = free_port()
    first = _start(data_dir, port)
    processes.append(first)
    wait_ready(f"http://127.0.0.1:{port}", first, timeout_s=60)
    first.send_signal(signal.SIGINT)
    output, _ = first.communicate(timeout=30)
    match = re.search(r"password: (\S+)\s+\(shown only now\)", output)
    assert match, output
    password = match.group(1)
    secret = (data_dir / "secret.key").read_text()

    second = _start(data_dir, port)
    processes.append(second)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, second, timeout_s=60)
    assert httpx.get(f"{url}/v1/tokens", headers=basic(("admin", password))).status_code == 200
    second.send_signal(signal.SIGTERM)
    output, _ = second.communicate(timeout=30)
    assert "shown only now" not in output
    assert password not in output
    assert (data_dir / "secret.key").read_text() == secret


def test_zookeeper_dies_with_a_killed_dev_stack(tmp_path: Path, processes: list[subprocess.Popen[str]]) -> None:
    port = free_port()
    process = _start(tmp_path / "dev", port, KTS_ADMIN_PASSWORD="pw")
    processes.append(process)
    wait_ready(f"http://127.0.0.1:{port}", process, timeout_s=60)
    process.kill()
    output, _ = process.communicate(timeout=30)
    zk_port = _zookeeper_port(output)
    deadline = time.monotonic() + 20
    answer = "imok"
    while answer == "imok" and time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            answer = four_letter_word(zk_port)
        except OSError:
            answer = ""
    assert answer != "imok", "an orphaned ZooKeeper outlived kts dev"


def test_a_busy_port_stops_dev_before_zookeeper_with_one_line_naming_port(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        data_dir = tmp_path / "dev"
        result = subprocess.run(
            [*KTS, "dev", "--port", str(port), "--data-dir", str(data_dir)],
            cwd=ROOT,
            env=kts_env(KTS_ADMIN_PASSWORD="admin-pw"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"kts: cannot listen on 127.0.0.1:{port} (--port): the port is already in use; choose a free one with "
        "--port (make run PORT=8081)"
    ]
    assert not data_dir.exists()  # nothing started: no ZooKeeper data, no secret key


def _banner_line(output: str) -> str:
    (line,) = [line for line in output.splitlines() if line.startswith("  super user: admin")]
    return line


def _run_until_ready(data_dir: Path, **env: str) -> str:
    """Start ``kts dev``, wait until it serves, stop it; its output."""
    port = free_port()
    process = _start(data_dir, port, **env)
    try:
        wait_ready(f"http://127.0.0.1:{port}", process, timeout_s=60)
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    return output


def _logs_in(data_dir: Path, password: str) -> bool:
    port = free_port()
    process = _start(data_dir, port)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, process, timeout_s=60)
        return httpx.get(f"{url}/v1/tokens", headers=basic(("admin", password))).status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


def test_the_banner_says_what_happened_to_the_admins_password_in_every_case(tmp_path: Path) -> None:
    """A fresh data dir with KTS_ADMIN_PASSWORD, the same again, another one, none (kept), and a fresh data dir
    without it (generated): each start's banner names what it did, and the password it names logs in."""
    data_dir = tmp_path / "dev"
    output = _run_until_ready(data_dir, KTS_ADMIN_PASSWORD="first-pw")
    assert _banner_line(output) == "  super user: admin  password: KTS_ADMIN_PASSWORD's (set now)"
    assert "first-pw" not in output

    assert _banner_line(_run_until_ready(data_dir, KTS_ADMIN_PASSWORD="first-pw")) == (
        "  super user: admin  password: KTS_ADMIN_PASSWORD's (unchanged)"
    )
    assert _banner_line(_run_until_ready(data_dir, KTS_ADMIN_PASSWORD="second-pw")) == (
        "  super user: admin  password: KTS_ADMIN_PASSWORD's (it replaced the one admin had)"
    )
    output = _run_until_ready(data_dir)
    assert _banner_line(output) == (
        "  super user: admin  password: unchanged, not shown again (set KTS_ADMIN_PASSWORD to reset it)"
    )
    assert _logs_in(data_dir, "second-pw") and not _logs_in(data_dir, "first-pw")

    fresh = _run_until_ready(tmp_path / "fresh")
    match = re.fullmatch(r"  super user: admin  password: (\S+)  \(shown only now\)", _banner_line(fresh))
    assert match, fresh
    assert _logs_in(tmp_path / "fresh", match.group(1))


def test_nothing_but_the_banner_and_the_servers_log_is_printed_before_it(tmp_path: Path) -> None:
    """kazoo's own warnings (a "Connection dropped" when the admin's set-up disconnects) read like a failure
    right before the banner."""
    output = _run_until_ready(tmp_path / "dev", KTS_ADMIN_PASSWORD="pw")
    before_banner = output[: output.index("kts dev on ")].splitlines()
    assert len(before_banner) == 1 and before_banner[0].startswith("starting ZooKeeper on 127.0.0.1:"), output


def test_a_port_that_is_no_port_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [*KTS, "dev", "--port", "70000", "--data-dir", str(tmp_path / "dev")],
        cwd=ROOT,
        env=kts_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "argument --port: '70000' is not a port number (1 to 65535)" in result.stderr
    assert not (tmp_path / "dev").exists()
