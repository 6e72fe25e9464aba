# @when('self.x == x'): messages that arrive before their turn wait, and run in order.
from ucharm import charm, Chare, Array, Group, when


class Ordered(Chare):
    def __init__(self):
        self.iter = 0
        self.log = []

    @when("self.iter == iter")
    def step(self, iter, value):
        self.log.append((iter, value))
        self.iter += 1

    @when("self.iter >= need and len(self.log) > 0")
    def after(self, need):
        return (need, self.iter)

    def get_log(self):
        return list(self.log)


class Sender(Chare):
    def send_steps(self, target, iters):
        for it in iters:
            target.step(it, charm.myPe())


def main(args):
    n = charm.numPes()
    a = Array(Ordered, n + 2)  # 0: steps from every PE; n + 1: from main; others fresh
    charm.awaitCreation(a)
    k = 8
    # Sent in reverse order: each waits until the previous ones have run.
    for it in reversed(range(k)):
        a[n + 1].step(it, "main")
    assert a[n + 1].get_log(ret=True).get() == [(it, "main") for it in range(k)]

    # Steps of one element sent from every PE, interleaved out of order.
    senders = Group(Sender)
    charm.awaitCreation(senders)
    target = a[0]
    plan = {pe: list(range(pe, 2 * n, n))[::-1] for pe in range(n)}
    done = a[0].after(2 * n, ret=True)  # waits until all 2n steps have run
    for pe in range(n):
        senders[pe].send_steps(target, plan[pe])
    assert done.get() == (2 * n, 2 * n)
    log = a[0].get_log(ret=True).get()
    assert [it for it, _ in log] == list(range(2 * n)), log
    assert [pe for _, pe in log] == [it % n for it in range(2 * n)], log

    # A broadcast of out-of-order steps: every element orders its own.
    for it in (2, 1, 0):
        a.step(it, "b")
    logs = a.get_log(ret=True).get()
    for i in range(1, n + 1):
        assert logs[i] == [(0, "b"), (1, "b"), (2, "b")], logs
    assert logs[n + 1] == [(it, "main") for it in range(k)]  # 'b' steps 0..2 never match iter 8
    print("ok")
    charm.exit()


charm.start(main)
