"""A CCS client: calls handlers of a running job (charm.CcsRegisterHandler, or Charm++'s
CcsRegisterHandler) through its CCS server, as Charm++'s CcsConnect/CcsSendRequest/
CcsRecvResponse do, speaking the same wire protocol (SHA-1 authentication included).

    from ucharm.ccs import CcsServer
    server = CcsServer("127.0.0.1", port)          # the port the job printed
    server.send_request("ping", 0, b"hello")       # handler name, PE (-1: every PE), data
    print(server.recv_response(timeout=10))

Needs only the standard library: a client runs anywhere, without the runtime.
"""
import hashlib
import os
import re
import socket
import struct

__all__ = ["CcsServer", "CcsError", "parse_key", "read_key_file", "server_address"]

_NAME_BYTES = 32


class CcsError(Exception):
    """The server refused or closed a request, or did not answer in time."""


def parse_key(text):
    """A key as Charm++'s key files write it (two characters per byte, each pair a decimal
    number; the first pair that is none ends the key): 16 bytes."""
    if isinstance(text, (bytes, bytearray)) and len(text) == 16:
        return bytes(text)
    text = text.decode() if isinstance(text, (bytes, bytearray)) else str(text)
    key = bytearray(16)
    n = 0
    for i in range(16):
        pair = text[2 * i:2 * i + 2]
        if not pair:
            break
        if len(pair) == 1 or pair[1] in " \n":
            pair = pair[0] + "0"
        m = re.match(r"\s*[+-]?\d+", pair)
        if not m:
            break
        key[i] = int(m.group()) & 0xFF
        n += 1
    if n == 0:
        raise ValueError(f"not a CCS key: {text!r}")
    return bytes(key)


def read_key_file(path, level=0):
    """The key of `level` in a Charm++ CCS key file (lines 'LEVEL KEY')."""
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].isdigit() and int(parts[0]) == level:
                return parse_key(parts[1])
    raise ValueError(f"{path}: no key for security level {level}")


def server_address(text):
    """(ip, port) from a job's output: the line 'ccs: Server IP = A, Server port = P $'."""
    m = re.search(r"ccs: Server IP = ([0-9.]+), Server port = (\d+)", text)
    return (m.group(1), int(m.group(2))) if m else None


def _hash(key, salt, header=None):
    m = bytearray(52)
    m[0:16] = key
    m[16:20] = struct.pack(">I", salt & 0xFFFFFFFF)
    if header is not None:
        m[20:36] = header[:16]
    return hashlib.sha1(bytes(m)).digest()


def _recv_exact(sock, n):
    chunks, got = [], 0
    while got < n:
        b = sock.recv(min(n - got, 1 << 20))
        if not b:
            raise CcsError(f"the server closed the connection ({got} of {n} bytes came)")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


class CcsServer:
    """A connection to a job's CCS server (Charm++'s CcsServer). Each request opens its own
    TCP connection; send_request then recv_response (or no_response) in turn."""

    def __init__(self, host="127.0.0.1", port=None, key=None, timeout=120, level=0):
        if port is None:
            raise TypeError("CcsServer(host, port): give the port the job printed ('Server port = ...')")
        self.host, self.port, self.timeout, self.level = host, int(port), timeout, level
        self._key = parse_key(key) if key is not None else None
        self._sock = None
        self._reply_salt = None
        self._client_id = self._client_salt = None
        if self._key is not None:
            self._authenticate()
        # As Charm++'s CcsConnect: the job's nodes and PEs per node.
        self.send_request("ccs_getinfo", 0, b"")
        info = self.recv_response()
        n = struct.unpack_from(">i", info, 0)[0] if len(info) >= 4 else 0
        self.num_nodes = n
        self.node_pes = list(struct.unpack_from(f">{n}i", info, 4)) if len(info) >= 4 * (n + 1) else []
        self.num_pes = sum(self.node_pes)

    # Charm++'s names
    def connect(self):
        return self

    def _connect(self):
        s = socket.create_connection((self.host, self.port), timeout=self.timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def _authenticate(self):
        s1 = struct.unpack(">I", os.urandom(4))[0]
        with self._connect() as s:
            s.sendall(bytes([0x80, 0x00, 0x01, self.level]) + struct.pack(">I", s1))
            try:
                s2 = struct.unpack(">I", _recv_exact(s, 4))[0]
                s.sendall(_hash(self._key, s2))
                reply = _recv_exact(s, 28)
            except CcsError:
                raise CcsError("the CCS server refused the key (authentication failed)") from None
        if reply[:20] != _hash(self._key, s1):
            raise CcsError("the CCS server does not know the key (its proof differs)")
        self._client_id, self._client_salt = struct.unpack(">II", reply[20:28])

    def send_request(self, handler, pe, data=b"", pes=None):
        """Sends `data` to the handler named `handler` on PE `pe` (-1: every PE, the replies
        merged; or pes=[...] for a multicast). The reply comes with recv_response()."""
        name = handler.encode() if isinstance(handler, str) else bytes(handler)
        if not name or len(name) >= _NAME_BYTES:
            raise ValueError(f"a CCS handler name has 1 to {_NAME_BYTES - 1} bytes: {handler!r}")
        if isinstance(data, str):
            data = data.encode()
        data = bytes(data)
        pe_list = b""
        if pes is not None:
            pes = [int(p) for p in pes]
            if len(pes) == 1:
                pe = pes[0]
            else:
                pe = -len(pes)
                pe_list = struct.pack(f">{len(pes)}i", *pes)
        header = struct.pack(">ii", len(data), int(pe)) + name.ljust(_NAME_BYTES, b"\0")
        prefix = b""
        if self._key is not None:
            self._reply_salt = struct.unpack(">I", os.urandom(4))[0]
            prefix = (bytes([0x80, 0x00, 0x00, self.level]) + struct.pack(">II", self._client_id, self._reply_salt)
                      + _hash(self._key, self._client_salt, header))
            self._client_salt = (self._client_salt + 1) & 0xFFFFFFFF
        self.no_response()
        self._sock = self._connect()
        self._sock.sendall(prefix + header + pe_list + data)

    def send_broadcast_request(self, handler, data=b""):
        self.send_request(handler, -1, data)

    def send_multicast_request(self, handler, pes, data=b""):
        self.send_request(handler, 0, data, pes=pes)

    def recv_response(self, timeout=None):
        """The reply (bytes) to the last request; CcsError when the server closed the
        connection without one (a refused request) or none came within `timeout` s."""
        if self._sock is None:
            raise CcsError("recv_response: no request is waiting for a reply")
        s, self._sock = self._sock, None
        try:
            s.settimeout(self.timeout if timeout is None else timeout)
            if self._key is not None:
                if _recv_exact(s, 20) != _hash(self._key, self._reply_salt):
                    raise CcsError("the reply's authentication hash differs")
            (n,) = struct.unpack(">I", _recv_exact(s, 4))
            return _recv_exact(s, n)
        except socket.timeout:
            raise CcsError("no CCS reply in time") from None
        finally:
            s.close()

    def no_response(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def close(self):
        self.no_response()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # Charm++'s C names, for code ported from it
    CcsSendRequest = send_request
    CcsSendBroadcastRequest = send_broadcast_request
    CcsRecvResponse = recv_response
    CcsNoResponse = no_response
    CcsFinalize = close
