"""liveViz: a 4x4 array deposits 24x24 pieces at 20-pixel steps of an 80x80 image (each
piece its own color; neighbours overlap by 4 pixels, where blue sums to 200 and, where four
meet, saturates at 255; pieces at the right and bottom edges are clipped). In poll mode it
deposits 3 images in a row (red shifted by 10 per step)."""
import sys

from ucharm import charm, Chare, Array, liveviz

N, P, OVER = 4, 20, 4  # N x N elements at P-pixel steps, each (P+OVER) x (P+OVER)


def piece_color(i, j, step):
    return ((40 * i + step) % 256, (40 * j) % 256, 100)


class Unit(Chare):
    def req_img(self, request):
        self.deposit(0)

    def deposit(self, step):
        i, j = self.thisIndex
        r, g, b = piece_color(i, j, step)
        side = P + OVER
        data = bytes([r, g, b]) * (side * side)
        liveviz.LiveViz.deposit(data, self, i * P, j * P, side, side, N * P, N * P)

    def poll_images(self):
        for step in range(3):
            self.deposit(step * 10)


def main(args):
    poll = "poll" in args
    units = Array(Unit, dims=(N, N))
    liveviz.LiveViz.init(liveviz.Config(), units.req_img, poll=poll)
    if poll:
        units.poll_images()
    print("liveViz ready", flush=True)


charm.start(main)
