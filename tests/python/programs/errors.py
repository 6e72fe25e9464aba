# Bad input: each case (argv[1]) must end the job with a clear message on stderr naming
# the cause (test_errors.py checks the text), never hang. 'raise_ret*' are the good
# cases: an exception in a ret=True call is re-raised by get() in the caller.
import threading

import numpy as np

from ucharm import charm, Chare, Group, Array, ArrayMap, Channel, Future, Reducer, coro


class BadMap(ArrayMap):
    def procNum(self, index):
        return charm.numPes() + 98 if index[0] == 3 else 0


class Target(Chare):
    def __init__(self, fail=False):
        if fail and self.thisIndex == charm.numPes() - 1:
            raise RuntimeError("ctor-fail")

    def take(self, x):
        return x

    def explode(self):
        if self.thisIndex in (charm.numPes() - 1, (charm.numPes() - 1,)):
            raise ValueError("boom-42")
        return "fine"

    def blocking_get(self):
        f = Future()
        return f.get()  # not a coroutine: must say so

    def plain_recv(self, other):
        ch = Channel(self, remote=other)
        return ch.recv()

    def give_lambda(self):
        return lambda: 1

    def call_with_lock(self, other):
        other.take(threading.Lock())

    def contribute_mixed(self, fut):
        red = Reducer.sum if self.thisIndex[0] % 2 == 0 else Reducer.max
        self.contribute(1, red, fut)

    def contribute_alone(self, fut):
        self.contribute(1, Reducer.sum, fut)

    @coro
    def get_foreign(self, fut):
        return fut.get()  # the future belongs to PE 0

    @coro
    def recv_host_into_numpy(self, other):
        ch = Channel(self, remote=other)
        return ch.recv(np.empty(10))

    def send_one(self, other):
        ch = Channel(self, remote=other)
        ch.send("host object")


def main(args):
    case = args[1]
    n = charm.numPes()
    last = n - 1
    g = Group(Target)
    a = Array(Target, 4)
    charm.awaitCreation(g, a)
    if case == "unpicklable_lambda":
        g[last].take(lambda x: x)
    elif case == "unpicklable_lock":
        a[1].take(threading.Lock())
    elif case == "unpicklable_in_entry":
        g[last].call_with_lock(g[0])
    elif case == "unpicklable_return":
        g[last].give_lambda(ret=True).get()
    elif case == "unknown_method_broadcast":
        g.nosuch()
    elif case == "unknown_method_element":
        a[3].nosuch(1)
    elif case == "wrong_argument_count":
        g[last].take(ret=True).get()
    elif case == "array_index_out_of_bounds":
        a[4].take(1)
    elif case == "array_index_negative":
        a[-1].take(1)
    elif case == "array_index_dimensions":
        a[1, 2].take(1)
    elif case == "group_index_out_of_range":
        g[n].take(1)
    elif case == "chare_on_pe_out_of_range":
        Chare(Target, onPE=n)
    elif case == "not_a_chare_class":
        Group(dict)
    elif case == "array_too_many_dimensions":
        Array(Target, (1, 2, 3, 4, 1, 1, 1))
    elif case == "insert_into_fixed_array":
        a.ckInsert(7)
    elif case == "local_chare_class":
        class Local(Chare):
            pass
        Group(Local)
    elif case == "get_in_plain_entry":
        g[last].blocking_get()
    elif case == "recv_in_plain_entry":
        p = Array(Target, 2)
        p[0].plain_recv(p[1])
        p[1].plain_recv(p[0])
    elif case == "get_foreign_future":
        g[last].get_foreign(Future(), ret=True).get()
    elif case == "recv_host_message_into_numpy":
        p = Array(Target, 2)
        p[1].send_one(p[0])
        p[0].recv_host_into_numpy(p[1], ret=True).get()
    elif case == "bad_array_map":
        Array(Target, 5, map=Group(BadMap))
    elif case == "map_not_an_array_map":
        Array(Target, 5, map=g)
    elif case == "raise_in_entry":
        g.explode()
    elif case == "raise_in_constructor":
        Group(Target, args=[True])
    elif case == "raise_in_main":
        raise KeyError("main-fail")
    elif case == "reducers_disagree":
        f = Future()
        a.contribute_mixed(f)
        f.get()
    elif case == "contribute_in_singleton_chare":
        # charm4py: a singleton chare is a one-element array; its reduction is its own value
        c = Chare(Target, onPE=last)
        f = Future()
        c.contribute_alone(f)
        assert f.get() == 1
        print("ok")
        charm.exit()
    elif case == "raise_ret":
        try:
            g[last].explode(ret=True).get()
        except ValueError as e:
            assert str(e) == "boom-42", e
        else:
            raise AssertionError("get() did not raise")
        # A broadcast: the list holds the exception of each element that raised one
        # (charm4py's tests/exceptions/test.py); awaitable=True raises it.
        got = a.explode(ret=True).get()
        errors = [v for v in got if isinstance(v, ValueError)]
        assert errors and all(str(e) == "boom-42" for e in errors), got
        try:
            a.explode(awaitable=True).get()
        except ValueError as e:
            assert str(e) == "boom-42", e
        else:
            raise AssertionError("get() of an awaitable broadcast did not raise")
        assert g[0].take(5, ret=True).get() == 5  # the job goes on
        print("ok")
        charm.exit()
        return
    else:
        raise ValueError(f"unknown case {case}")
    # Every bad case has ended the job by now or will end it; wait without a limit here:
    # the launcher's time limit turns a hang into a test failure.
    Future().get()


charm.start(main)
