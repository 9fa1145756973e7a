"""How outputs are written (pir/cli/common.py AtomicOutput, docs/output.md): regular files
by rename, devices and FIFOs in place, symlinks followed, modes kept, and no temporary file
left behind by an error or a signal.

Everything here happens inside tmp_path: the character device is made there with the null
device's numbers, never /dev/null itself (these tests may run as root)."""

from __future__ import annotations

import io
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from helpers import cli  # noqa: E402

PROGRAM = """module @m {
  func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>) {
    %y = nn.relu(%x) : (tensor<2xf32>) -> tensor<2xf32> loc("relu")
    func.return(%y) : (tensor<2xf32>) -> ()
  }
}
"""


@pytest.fixture
def work(tmp_path):
    (tmp_path / "m.pir").write_text(PROGRAM)
    np.save(tmp_path / "x.npy", np.array([-1.0, 2.0], np.float32))
    return tmp_path


def printed(work) -> bytes:
    """What `pir verify m.pir -o OUT` writes."""
    code, out, err = cli("verify", work / "m.pir", "-o", "-", binary=True)
    assert code == 0, err
    return out


def temporaries(*folders) -> list[str]:
    return [f for d in folders for f in os.listdir(d) if f.endswith(".tmp")]


def make_null_device(path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device needs root (CAP_MKNOD)")


# -- what is written in place ---------------------------------------------------------------

def test_a_character_device_is_written_in_place_not_replaced(work):
    dev = work / "null"
    make_null_device(dev)
    before = os.lstat(dev)
    code, _, err = cli("verify", work / "m.pir", "-o", dev)
    assert code == 0, err
    # A .npz too: np.savez's zip writer must not trust the device's lseek (always 0).
    code, _, err = cli("run", work / "m.pir", "--input", f"x={work / 'x.npy'}", "-o", dev)
    assert code == 0, err
    after = os.lstat(dev)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert stat.S_IMODE(after.st_mode) == stat.S_IMODE(before.st_mode)
    assert temporaries(work) == []


def _drain(path, into: list) -> threading.Thread:
    def read():
        with open(path, "rb") as f:
            into.append(f.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


def test_a_fifo_is_written_in_place_for_its_reader(work):
    fifo = work / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _drain(fifo, got)
    code, _, err = cli("verify", work / "m.pir", "-o", fifo)
    reader.join(10)
    assert code == 0, err
    assert got == [printed(work)]
    got.clear()
    reader = _drain(fifo, got)
    code, _, err = cli("run", work / "m.pir", "--input", f"x={work / 'x.npy'}", "-o", fifo)
    reader.join(10)
    assert code == 0, err
    np.testing.assert_array_equal(np.load(io.BytesIO(got[0]))["y"], [0.0, 2.0])
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert temporaries(work) == []


def test_a_socket_is_refused_and_left_alone(work):
    path = work / "s"
    if len(str(path)) >= 100:
        pytest.skip("the temporary folder's path is too long for a unix socket")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        code, _, err = cli("verify", work / "m.pir", "-o", path)
    assert code == 1
    assert err.startswith(f"pir: error: {path}: cannot write: ")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    assert temporaries(work) == []


# -- what is replaced ------------------------------------------------------------------------

def test_a_symlink_is_followed_and_stays_a_symlink(work):
    other = work / "elsewhere"
    other.mkdir()
    target = other / "real.pir"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = work / "link.pir"
    link.symlink_to(os.path.join("elsewhere", "real.pir"))  # relative, as ln -s makes them
    code, _, err = cli("verify", work / "m.pir", "-o", link)
    assert code == 0, err
    assert os.path.islink(link) and os.readlink(link) == os.path.join("elsewhere", "real.pir")
    assert target.read_bytes() == printed(work)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert temporaries(work, other) == []


def test_a_dangling_symlink_creates_its_target(work):
    link = work / "link.pir"
    link.symlink_to("new.pir")
    code, _, err = cli("verify", work / "m.pir", "-o", link)
    assert code == 0, err
    assert os.path.islink(link) and (work / "new.pir").read_bytes() == printed(work)


def test_a_symlink_into_a_missing_folder_says_where_it_points(work):
    link = work / "link.pir"
    link.symlink_to("nowhere/new.pir")
    code, _, err = cli("verify", work / "m.pir", "-o", link)
    assert code == 1
    assert err == (f"pir: error: {link}: cannot write: No such file or directory "
                   "(a symlink to nowhere/new.pir)\n")
    assert os.path.islink(link) and temporaries(work) == []


def test_a_symlink_loop_is_an_error(work):
    (work / "a").symlink_to("b")
    (work / "b").symlink_to("a")
    code, _, err = cli("verify", work / "m.pir", "-o", work / "a")
    assert code == 1
    assert err == f"pir: error: {work / 'a'}: cannot write: Too many levels of symbolic links\n"


def test_a_replaced_file_keeps_its_mode(work):
    out = work / "o.pir"
    out.write_text("old\n")
    os.chmod(out, 0o604)
    code, _, err = cli("verify", work / "m.pir", "-o", out)
    assert code == 0, err
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o604 and out.read_bytes() == printed(work)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to someone else")
def test_root_keeps_the_owner_of_a_replaced_file(work):
    out = work / "o.pir"
    out.write_text("old\n")
    os.chown(out, 12345, 23456)
    code, _, err = cli("verify", work / "m.pir", "-o", out)
    assert code == 0, err
    st = os.stat(out)
    assert (st.st_uid, st.st_gid) == (12345, 23456)


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_a_new_file_gets_the_mode_open_would_give_it(work, umask):
    old = os.umask(umask)
    try:
        code, _, err = cli("verify", work / "m.pir", "-o", work / "new.pir")
    finally:
        os.umask(old)
    assert code == 0, err
    assert stat.S_IMODE(os.stat(work / "new.pir").st_mode) == 0o666 & ~umask


def test_a_directory_is_a_clear_error(work):
    (work / "out").mkdir()
    for out in (work / "out", f"{work / 'missing'}/"):
        code, _, err = cli("verify", work / "m.pir", "-o", out)
        assert (code, err) == (1, f"pir: error: {out}: is a directory\n")
    assert sorted(os.listdir(work)) == ["m.pir", "out", "x.npy"]


# -- signals ---------------------------------------------------------------------------------

# A command that writes part of its output, says so, and waits for a line on stdin before it
# finishes: the test signals it while the temporary file exists, or lets it go on.
SLOW_WRITER = """
import sys
import click
from pir.cli.common import AtomicOutput, run_command

@click.command()
@click.argument("out")
@run_command
def main(out):
    with AtomicOutput(out) as f:
        f.write(b"partial")
        f.flush()
        print("writing", flush=True)
        sys.stdin.readline()
        f.write(b" and the rest")

main()
"""


def start_slow_writer(work, target, ignore_hup: bool = False) -> subprocess.Popen:
    def setup():
        if ignore_hup:  # as nohup does
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(target)], cwd=work,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=setup)
    assert proc.stdout.readline() == "writing\n", proc.communicate()
    deadline = time.monotonic() + 10
    while not temporaries(work) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert temporaries(work), "the temporary file never appeared"
    return proc


@pytest.mark.parametrize("sig, code, message", [
    (signal.SIGTERM, 143, "pir: stopped by SIGTERM"),
    (signal.SIGHUP, 129, "pir: stopped by SIGHUP"),
    (signal.SIGINT, 130, "pir: interrupted"),
])
def test_a_signal_during_the_write_removes_the_temporary_file(work, sig, code, message):
    target = work / "new.out"
    proc = start_slow_writer(work, target)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert (proc.returncode, err) == (code, message + "\n")
    assert temporaries(work) == [] and not target.exists()


def test_a_signal_leaves_the_old_file_as_it_was(work):
    target = work / "old.out"
    target.write_bytes(b"old contents")
    proc = start_slow_writer(work, target)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert target.read_bytes() == b"old contents" and temporaries(work) == []


def test_an_ignored_hangup_stays_ignored(work):
    target = work / "new.out"
    proc = start_slow_writer(work, target, ignore_hup=True)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate("go on\n", timeout=30)
    assert proc.returncode == 0, err
    assert target.read_bytes() == b"partial and the rest" and temporaries(work) == []


def test_signal_handlers_are_put_back_after_the_write(work):
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)
    code, _, err = cli("verify", work / "m.pir", "-o", work / "o.pir")
    assert code == 0, err
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)) == before
