# Reducer.addReducer(func, pre=, post=) as charm4py documents it: func takes the list of
# contributions; pre(data, contributor) runs on each contribution; post(result) once on
# the final result. Registered at module level, so on every PE.
import numpy as np

from ucharm import charm, Chare, Group, Array, Reducer, Future


def concat_sorted(contribs):
    out = []
    for c in contribs:
        out.extend(c)
    return sorted(out)


def sum_squares(contribs):
    return sum(contribs)


def square_pre(data, contributor):
    return data * data


def tag_post(result):
    return ("total", result)


def np_norm_pre(data, contributor):
    return data * (contributor.thisIndex[0] + 1)


def np_stack(contribs):
    return np.maximum.reduce(contribs)


def label_pre(data, contributor):
    return [(contributor.thisIndex, data)]


def label_post(result):
    return [v for _, v in result]


Reducer.addReducer(concat_sorted)
Reducer.addReducer(sum_squares, pre=square_pre, post=tag_post)
Reducer.addReducer(np_stack, pre=np_norm_pre)

def labelled(contribs):
    out = []
    for c in contribs:
        out.extend(c)
    return sorted(out)


Reducer.addReducer(labelled, pre=label_pre, post=label_post)


class Worker(Chare):
    def run(self, fut1, fut2, fut3, fut4):
        k = self.thisIndex if isinstance(self.thisIndex, int) else self.thisIndex[0]
        self.contribute([k, -k], Reducer.concat_sorted, fut1)
        self.contribute(k + 1, Reducer.sum_squares, fut2)
        if isinstance(self.thisIndex, tuple):
            self.contribute(np.arange(4.0), Reducer.np_stack, fut3)
        else:
            fut3.send(None) if k == 0 else None
        self.contribute(f"e{k}", Reducer.labelled, fut4)


def main(args):
    n = charm.numPes()
    for proxy, count in [(Group(Worker), n), (Array(Worker, 2 * n + 1), 2 * n + 1)]:
        fs = [Future() for _ in range(4)]
        proxy.run(*fs)
        assert fs[0].get() == sorted([k for k in range(count)] + [-k for k in range(count)])
        assert fs[1].get() == ("total", sum((k + 1) ** 2 for k in range(count))), fs[1].get()
        v = fs[2].get()
        if v is not None:
            assert isinstance(v, np.ndarray) and v.tolist() == [x * count for x in range(4)], v
        assert fs[3].get() == [f"e{k}" for k in range(count)], fs[3].get()
    print("ok")
    charm.exit()


charm.start(main)
