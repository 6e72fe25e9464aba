"""liveViz: chares deposit pieces of a 2D image; the pieces are summed (saturating at 255)
into one image on PE 0, which CCS clients fetch through the "lvConfig" and "lvImage"
handlers (Charm++'s liveViz protocol), so Charm++'s liveViz client works, and so does
`python -m ucharm.liveviz HOST PORT out.png` (get_image/save_image below).

charm4py's API:

    from ucharm import liveviz
    liveviz.LiveViz.init(liveviz.Config(), array.reqImg)      # reqImg(self, request)
    ...   # in reqImg: liveviz.LiveViz.deposit(data, self, x, y, h, w, total_h, total_w)

Poll mode (LiveViz.init(cfg, cb, poll=True)): the program deposits images when it likes;
they wait on PE 0 (in order) until clients ask for them.

Request and reply formats (big-endian): lvConfig answers version, isColor, isPush, is3d
(4-byte ints; for 3D, then min and max as 3 doubles each); lvImage takes version, request
type, width, height (4-byte ints; 3D requests add a view) and answers width*height pixels,
1 byte each (grey) or 3 (RGB), rows top to bottom, the image in the top left corner.
"""
import struct
import sys
import zlib
from collections import deque

from .charm import charm
from .chare import Chare
from .reduction import Reducer

__all__ = ["Config", "LiveViz", "ImageRequest", "get_config", "get_image", "save_image"]


class Config:
    """What a client learns with lvConfig (charm4py's liveviz.Config)."""

    def __init__(self, version=1, isColor=True, isPush=True, is3d=False, min=(0.0, 0.0, 0.0),
                 max=(1.0, 1.0, 1.0)):
        self.version, self.isColor, self.isPush, self.is3d = version, bool(isColor), bool(isPush), bool(is3d)
        self.min, self.max = tuple(min), tuple(max)

    def to_binary(self):
        out = struct.pack(">iiii", self.version, int(self.isColor), int(self.isPush), int(self.is3d))
        if self.is3d:
            out += struct.pack(">6d", *self.min, *self.max)
        return out

    @classmethod
    def from_binary(cls, data):
        version, color, push, is3d = struct.unpack_from(">iiii", data, 0)
        c = cls(version, bool(color), bool(push), bool(is3d))
        if is3d and len(data) >= 64:
            v = struct.unpack_from(">6d", data, 16)
            c.min, c.max = v[:3], v[3:]
        return c

    def __repr__(self):
        return f"Config(version={self.version}, isColor={self.isColor}, isPush={self.isPush}, is3d={self.is3d})"


class ImageRequest:
    """A client's lvImage request: the size it wants (and, for 3D, its view)."""

    def __init__(self, version=1, request_type=0, width=0, height=0, view=None):
        self.version, self.request_type, self.width, self.height, self.view = version, request_type, width, height, view

    @classmethod
    def from_bytes(cls, data):
        if len(data) < 16:
            raise ValueError(f"lvImage: a request of {len(data)} bytes (at least 16: version, type, width, height)")
        version, rtype, w, h = struct.unpack_from(">iiii", data, 0)
        view = struct.unpack_from(">14d", data, 16) if len(data) >= 16 + 14 * 8 else None
        return cls(version, rtype, w, h, view)

    def to_bytes(self):
        return struct.pack(">iiii", self.version, self.request_type, self.width, self.height)

    def __repr__(self):
        return f"ImageRequest({self.width}x{self.height})"


# ---- the image: pieces gathered by a reduction, summed on PE 0 --------------------------------

def _liveviz_gather(contribs):
    out = []
    for c in contribs:
        out.extend(c)
    return out


def _one_piece(data, contributor=None):
    return [data]


Reducer.addReducer(_liveviz_gather, pre=_one_piece)


def _compose(pieces, color):
    """The sum of the pieces (saturating at 255) as bytes, with its width and height."""
    import numpy as np
    bpp = 3 if color else 1
    g_ht, g_wid = pieces[0][5], pieces[0][6]
    img = np.zeros((g_ht, g_wid, bpp), dtype=np.uint16)
    for data, x, y, ht, wid, _, _ in pieces:
        if ht <= 0 or wid <= 0:
            continue
        a = np.frombuffer(bytes(data), dtype=np.uint8)
        if a.size < ht * wid * bpp:
            raise ValueError(f"liveViz deposit: {a.size} bytes for a {wid}x{ht} piece of {bpp} byte(s) per pixel")
        a = a[:ht * wid * bpp].reshape(ht, wid, bpp)
        # Clipped to the image: a piece reaching past an edge loses what lies outside.
        x0, y0 = max(x, 0), max(y, 0)
        x1, y1 = min(x + wid, g_wid), min(y + ht, g_ht)
        if x1 > x0 and y1 > y0:
            img[y0:y1, x0:x1] += a[y0 - y:y1 - y, x0 - x:x1 - x]
    np.minimum(img, 255, out=img)
    return img.astype(np.uint8), g_wid, g_ht


def _fit(img, width, height):
    """The image in the top left corner of a width x height one (cut or padded with black)."""
    import numpy as np
    if width <= 0 or height <= 0:
        return b""
    out = np.zeros((height, width, img.shape[2]), dtype=np.uint8)
    h, w = min(height, img.shape[0]), min(width, img.shape[1])
    out[:h, :w] = img[:h, :w]
    return out.tobytes()


class _LiveVizRoot(Chare):
    """On PE 0: the CCS handlers and the images waiting for clients (poll mode) or the
    clients waiting for images."""

    def __init__(self, cfg, callback, poll):
        self.cfg, self.callback, self.poll = cfg, callback, poll
        self.waiting = deque()  # (request, delayed-reply token)
        self.images = deque()   # poll mode: composed images not yet fetched
        charm.CcsRegisterHandler("lvConfig", self.config_handler)
        charm.CcsRegisterHandler("lvImage", self.image_handler)

    def config_handler(self, msg):
        charm.CcsSendReply(self.cfg.to_binary())

    def image_handler(self, msg):
        req = ImageRequest.from_bytes(msg)
        if self.poll and self.images:
            img = self.images.popleft()
            charm.CcsSendReply(_fit(img, req.width, req.height))
            return
        self.waiting.append((req, charm.CcsDelayReply()))
        if not self.poll and self.callback is not None:
            self.callback(req)  # the array deposits a new image for it

    def image(self, pieces):
        img = _compose(pieces, self.cfg.isColor)[0]
        if self.poll and not self.waiting:
            self.images.append(img)
            return
        if not self.poll:
            # One image answers every client waiting for one.
            while self.waiting:
                req, token = self.waiting.popleft()
                charm.CcsSendDelayedReply(token, _fit(img, req.width, req.height))
            return
        req, token = self.waiting.popleft()
        charm.CcsSendDelayedReply(token, _fit(img, req.width, req.height))

    def pending_images(self):
        return len(self.images)


_root = None  # the _LiveVizRoot's proxy, on every PE once LiveViz.init has run


def _set_root(root):
    global _root
    _root = root


class LiveViz:
    cfg = None

    @classmethod
    def init(cls, cfg, cb=None, poll=False):
        """Sets liveViz up (from the main function, after charm.start): `cfg` a Config,
        `cb` the entry method (usually an array's, broadcast) called with an ImageRequest
        when a client asks for an image; poll=True: images are deposited at the program's
        pace and wait for clients. The job needs a CCS server (++server)."""
        if not isinstance(cfg, Config):
            raise TypeError(f"LiveViz.init: cfg must be a liveviz.Config, not {type(cfg).__name__}")
        if not poll and cb is None:
            raise TypeError("LiveViz.init: give the entry method that deposits an image (or poll=True)")
        if not charm.CcsEnabled():
            print("liveViz: this job runs no CCS server (start it with ++server): clients cannot connect",
                  file=sys.stderr)
        cls.cfg = cfg
        root = Chare(_LiveVizRoot, args=[cfg, cb, poll], onPE=0)
        charm.thisProxy.updateGlobals({"_root": root}, module_name=__name__, awaitable=True).get()

    @classmethod
    def config_handler(cls, msg):
        charm.CcsSendReply(cls.cfg.to_binary())

    @classmethod
    def deposit(cls, buffer, elem, x, y, ht, wid, g_ht, g_wid):
        """Contributes `elem`'s piece (a collective of its array or group: every element
        deposits once per image): `buffer` holds ht rows of wid pixels (1 byte each, or 3 in
        color) for the top left corner (x, y) of a g_wid x g_ht image."""
        if _root is None:
            raise RuntimeError("liveViz deposit before LiveViz.init")
        elem.reduce(_root.image, data=(bytes(buffer), int(x), int(y), int(ht), int(wid), int(g_ht), int(g_wid)),
                    reducer=_liveviz_gather)


# ---- the client side ---------------------------------------------------------------------------

def get_config(server):
    """The job's liveViz Config, through `server` (a ucharm.ccs.CcsServer)."""
    server.send_request("lvConfig", 0, b"")
    return Config.from_binary(server.recv_response())


def get_image(server, width, height, timeout=None):
    """An image of width x height from the job: (bytes, is_color)."""
    cfg = get_config(server)
    server.send_request("lvImage", 0, ImageRequest(1, 0, width, height).to_bytes())
    data = server.recv_response(timeout)
    bpp = 3 if cfg.isColor else 1
    if len(data) != width * height * bpp:
        raise ValueError(f"lvImage: {len(data)} bytes for a {width}x{height} image of {bpp} byte(s) per pixel")
    return data, cfg.isColor


def save_image(path, data, width, height, color=True):
    """Writes the pixels as PNG (path ending in .png) or PPM/PGM (otherwise)."""
    bpp = 3 if color else 1
    if str(path).lower().endswith(".png"):
        def chunk(kind, body):
            return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        rows = b"".join(b"\0" + data[r * width * bpp:(r + 1) * width * bpp] for r in range(height))
        png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2 if color else 0, 0, 0, 0))
               + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
        with open(path, "wb") as f:
            f.write(png)
    else:
        with open(path, "wb") as f:
            f.write(b"P6\n" if color else b"P5\n")
            f.write(f"{width} {height}\n255\n".encode())
            f.write(data)


def main(argv=None):
    """python -m ucharm.liveviz HOST PORT OUT.png [WIDTH HEIGHT]: fetches one image."""
    from .ccs import CcsServer
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (3, 5):
        sys.exit("usage: python -m ucharm.liveviz HOST PORT OUT.(png|ppm) [WIDTH HEIGHT]")
    w, h = (int(argv[3]), int(argv[4])) if len(argv) == 5 else (800, 800)
    with CcsServer(argv[0], int(argv[1])) as s:
        data, color = get_image(s, w, h)
    save_image(argv[2], data, w, h, color)
    print(f"liveViz: {w}x{h} image written to {argv[2]}")


if __name__ == "__main__":
    main()
