"""CCS and liveViz from outside the job: the job runs a CCS server (ucharmrun ++server), the
test is its client (ucharm.ccs.CcsServer, the wire protocol over TCP). Handlers on every PE,
replies now, delayed and sent from another PE, broadcasts and multicasts, the launcher's and
the program's spellings of the options; liveViz images in request and poll modes, checked
pixel by pixel and saved as PNG and PPM. With CHARM4PY_SRC set (a charm4py checkout),
charm4py's examples/ccs/ccs_server.py and examples/liveviz/liveviz.py run with only their
import changed."""
import os
import pathlib
import select
import struct
import subprocess
import time
import zlib

import pytest

from conftest import PROGRAMS, PYTHON, _env, ucharmrun

from ucharm.ccs import CcsError, CcsServer, server_address
from ucharm import liveviz

READY_S = 40


class Job:
    """A job started in the background; its output is read until `ready` appears."""

    def __init__(self, cmd, ready):
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(None),
                                  cwd=str(PROGRAMS))
        self.out = b""
        self.err = b""
        deadline = time.time() + READY_S
        while ready.encode() not in self.out:
            if time.time() > deadline or self.p.poll() is not None:
                self.stop()
                pytest.fail(f"the job did not get ready ({ready!r})\n{self.describe()}")
            self._read(0.2)
        self.address = server_address(self.out.decode())
        assert self.address and self.address[0] == "127.0.0.1", self.describe()

    def _read(self, wait):
        fds = [f for f in (self.p.stdout, self.p.stderr) if f]
        ready, _, _ = select.select(fds, [], [], wait)
        for f in ready:
            b = os.read(f.fileno(), 65536)
            if f is self.p.stdout:
                self.out += b
            else:
                self.err += b

    def wait(self, limit=30):
        deadline = time.time() + limit
        while self.p.poll() is None and time.time() < deadline:
            self._read(0.1)
        if self.p.poll() is None:
            self.stop()
            pytest.fail(f"the job did not end\n{self.describe()}")
        self._drain()
        return self.p.returncode

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self._drain()

    def _drain(self):
        while True:  # the rest of the output
            before = len(self.out) + len(self.err)
            self._read(0)
            if len(self.out) + len(self.err) == before:
                break

    def describe(self):
        return (f"command: {' '.join(self.cmd)}\n--- stdout ---\n{self.out.decode(errors='replace')[-4000:]}"
                f"\n--- stderr ---\n{self.err.decode(errors='replace')[-4000:]}")


def launch(script, pes, *args, launcher_opts=("++server", "++server-port", "0"), ready="registered"):
    cmd = [ucharmrun(), "-n", str(pes), "--timeout", "60", *launcher_opts, PYTHON, str(script), *args]
    return Job(cmd, ready)


@pytest.mark.parametrize("pes", [1, 2, 4])
def test_ccs_handlers_on_every_pe(pes):
    job = launch(PROGRAMS / "ccs_server.py", pes)
    try:
        s = CcsServer(*job.address)
        assert s.num_pes == pes and s.num_nodes == pes, job.describe()
        for pe in range(pes):
            s.send_request("ping", pe, b"hi")
            assert s.recv_response(10) == f"pong from PE {pe}: hi".encode(), job.describe()
            s.send_request("later", pe, "x")
            assert s.recv_response(10) == f"from {pe} answered by {(pe + 1) % pes}: x".encode(), job.describe()
        s.send_broadcast_request("whoami")
        assert s.recv_response(10) == b"".join(struct.pack(">i", pe) for pe in range(pes)), job.describe()
        if pes > 1:
            s.send_multicast_request("whoami", [pes - 1, 0])
            assert s.recv_response(10) == struct.pack(">ii", 0, pes - 1), job.describe()
        s.send_request("silent", pes - 1, b"")
        assert s.recv_response(10) == b"", job.describe()
        s.send_request("no_such_handler", 0, b"")
        assert s.recv_response(10) == b"", job.describe()
        s.send_request("quit", 0, b"")
        assert s.recv_response(10) == b"bye"
        assert job.wait() == 0, job.describe()
    finally:
        job.stop()
    out = job.out.decode()
    assert "outside a handler: charm.CcsSendReply: no CCS request waits for a reply here" in out, job.describe()
    assert "server ('127.0.0.1'," in out and "enabled True" in out, job.describe()
    assert "Unknown CCS handler name 'no_such_handler'" in out, job.describe()


def test_program_options_and_authentication(tmp_path):
    keyfile = tmp_path / "keys"
    keyfile.write_text("0 31415926535897932384626433832795\n")
    # +server-auth among the program's arguments (as under mpirun), not the launcher's.
    job = launch(PROGRAMS / "ccs_server.py", 2, "+server-auth", str(keyfile), launcher_opts=())
    try:
        with pytest.raises(CcsError):
            CcsServer(*job.address)  # no key: refused
        with pytest.raises(CcsError, match="authentication failed"):
            CcsServer(*job.address, key="27182818284590452353602874713526")
        s = CcsServer(*job.address, key="31415926535897932384626433832795")
        s.send_request("ping", 1, b"signed")
        assert s.recv_response(10) == b"pong from PE 1: signed"
        s.send_request("quit", 0)
        assert s.recv_response(10) == b"bye"
        assert job.wait() == 0, job.describe()
    finally:
        job.stop()
    assert "an unauthenticated request (this server requires a key)" in job.err.decode(), job.describe()


def expected_image(step=0):
    n, p, over = 4, 20, 4
    img = [[[0, 0, 0] for _ in range(n * p)] for _ in range(n * p)]
    for i in range(n):
        for j in range(n):
            color = ((40 * i + step) % 256, (40 * j) % 256, 100)
            for y in range(j * p, min(j * p + p + over, n * p)):
                for x in range(i * p, min(i * p + p + over, n * p)):
                    for c in range(3):
                        img[y][x][c] += color[c]
    return bytes(min(v, 255) for row in img for px in row for v in px)


def read_png(path):
    b = pathlib.Path(path).read_bytes()
    assert b[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", b[16:24])
    pos, idat = 8, b""
    while pos < len(b):
        (n,) = struct.unpack(">I", b[pos:pos + 4])
        kind = b[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += b[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    return w, h, b"".join(raw[r * (3 * w + 1) + 1:(r + 1) * (3 * w + 1)] for r in range(h))


@pytest.mark.parametrize("pes", [1, 4])
def test_liveviz_request_mode(pes, tmp_path):
    job = launch(PROGRAMS / "liveviz_prog.py", pes, ready="liveViz ready")
    try:
        s = CcsServer(*job.address)
        cfg = liveviz.get_config(s)
        assert cfg.isColor and cfg.isPush and not cfg.is3d
        data, color = liveviz.get_image(s, 80, 80, timeout=20)
        assert color and data == expected_image(), job.describe()
        liveviz.save_image(tmp_path / "img.png", data, 80, 80)
        assert read_png(tmp_path / "img.png") == (80, 80, data)
        # A larger request: the image in its top left corner, black around it.
        big, _ = liveviz.get_image(s, 100, 90, timeout=20)
        assert big[:240] == data[:240] and big[3 * 80:3 * 100] == bytes(60), job.describe()
        liveviz.save_image(tmp_path / "img.ppm", big, 100, 90)
        assert (tmp_path / "img.ppm").read_bytes() == b"P6\n100 90\n255\n" + big
    finally:
        job.stop()


def test_liveviz_poll_mode():
    job = launch(PROGRAMS / "liveviz_prog.py", 2, "poll", ready="liveViz ready")
    try:
        s = CcsServer(*job.address)
        for step in range(3):  # the images in the order deposited
            data, _ = liveviz.get_image(s, 80, 80, timeout=20)
            assert data == expected_image(step * 10), f"image {step}\n" + job.describe()
        # None left: the request waits for the next image (none comes).
        with pytest.raises(CcsError, match="in time"):
            liveviz.get_image(s, 80, 80, timeout=1)
    finally:
        job.stop()


def test_liveviz_client_command(tmp_path):
    job = launch(PROGRAMS / "liveviz_prog.py", 2, ready="liveViz ready")
    try:
        out = tmp_path / "cmd.png"
        r = subprocess.run([PYTHON, "-m", "ucharm.liveviz", *map(str, job.address), str(out), "80", "80"],
                           capture_output=True, text=True, timeout=60, env=_env(None))
        assert r.returncode == 0, r.stderr
        assert read_png(out) == (80, 80, expected_image())
    finally:
        job.stop()


CHARM4PY = os.environ.get("CHARM4PY_SRC")


def charm4py_example(tmp_path, rel):
    src = pathlib.Path(CHARM4PY) / "examples" / rel
    dst = tmp_path / src.name
    dst.write_text(src.read_text().replace("from charm4py import", "from ucharm import"))
    return dst


@pytest.mark.skipif(not CHARM4PY, reason="CHARM4PY_SRC (a charm4py checkout) is not set")
@pytest.mark.parametrize("pes", [1, 2])
def test_charm4py_ccs_server_example(pes, tmp_path):
    job = launch(charm4py_example(tmp_path, "ccs/ccs_server.py"), pes, ready="Waiting for net requests")
    try:
        s = CcsServer(*job.address)
        for pe in range(pes):
            s.send_request("ping", pe, b"client\0")
            assert s.recv_response(10) == f"Hello to sender client from PE {pe}.\n".encode(), job.describe()
        s.send_request("ping2", pes - 1, b"again")
        assert s.recv_response(10) == f"Hello to sender again from PE {pes - 1}.\n".encode(), job.describe()
    finally:
        job.stop()
    assert "CCS Ping handler called on 0" in job.out.decode(), job.describe()


@pytest.mark.skipif(not CHARM4PY, reason="CHARM4PY_SRC (a charm4py checkout) is not set")
def test_charm4py_liveviz_example(tmp_path):
    job = launch(charm4py_example(tmp_path, "liveviz/liveviz.py"), 2, ready="Waiting for net requests")
    try:
        s = CcsServer(*job.address)
        data, color = liveviz.get_image(s, 800, 800, timeout=60)
        liveviz.save_image(tmp_path / "example.png", data, 800, 800)
    finally:
        job.stop()
    # Every pixel is a saturating sum of the example's particle colors (or black), and
    # each of the 256 tiles has particles.
    allowed = {0, 200, 255}
    assert set(data) <= allowed, sorted(set(data))
    for ti in range(16):
        for tj in range(16):
            tile = b"".join(data[((tj * 50 + y) * 800 + ti * 50) * 3:((tj * 50 + y) * 800 + ti * 50 + 50) * 3]
                            for y in range(50))
            assert any(tile), f"tile {ti},{tj} is black"
    assert read_png(tmp_path / "example.png")[:2] == (800, 800)
