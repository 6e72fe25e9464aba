# Broadcasts to an array filled by ckInsert, as in Charm++ (on which charm4py is built):
# an element gets exactly the broadcasts sent after its insertion, also when the
# broadcast reaches its PE before or after the element's creation does.
from ucharm import charm, Chare, Array, Future


class Cell(Chare):
    def __init__(self):
        self.rounds = []

    def tick(self, rnd, fut):
        self.rounds.append(rnd)
        fut.send(self.thisIndex[0])

    def seen(self):
        return list(self.rounds)


def main(args):
    n = charm.numPes()
    a = Array(Cell, ndims=1)
    total = 0
    rounds = 4
    for rnd in range(rounds):
        for i in range(total, total + n + 1):
            a.ckInsert(i)
        total += n + 1
        f = Future(total)
        a.tick(rnd, f)
        assert sorted(f.get()) == list(range(total)), rnd
    for i in range(total):
        first = i // (n + 1)
        got = a[i].seen(ret=True).get()
        assert got == list(range(first, rounds)), f"element {i} (inserted before round {first}) saw rounds {got}"
    print("ok")
    charm.exit()


charm.start(main)
