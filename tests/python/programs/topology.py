"""Host topology: charm.myHost, numHosts, getHostPes & co. agree with each other on every
PE, and the topology-aware spanning trees (getTopoTreeEdges, getTopoSubtrees) span the
PEs given, once each, crossing between hosts once per host. argv[1] (optional): the
number of hosts expected. Prints 'ok'."""
import sys

from ucharm import charm, Chare, Group


def check_hosts():
    npes = charm.numPes()
    assert 0 <= charm.myHost() < charm.numHosts()
    assert charm.myHost() == charm.getPeHost(charm.myPe())
    seen = []
    for host in range(charm.numHosts()):
        pes = charm.getHostPes(host)
        assert pes == sorted(pes) and pes, pes
        assert charm.getHostNumPes(host) == len(pes)
        assert charm.getHostFirstPe(host) == pes[0] and charm.getHostLastPe(host) == pes[-1]
        for rank, pe in enumerate(pes):
            assert charm.getPeHost(pe) == host and charm.getPeHostRank(pe) == rank
        seen += pes
    assert sorted(seen) == list(range(npes))
    firsts = [charm.getHostFirstPe(h) for h in range(charm.numHosts())]
    assert firsts == sorted(firsts), "hosts are numbered by their first PE"
    for bad in (-1, charm.numHosts()):
        try:
            charm.getHostPes(bad)
            raise AssertionError("a host out of range was accepted")
        except ValueError:
            pass
    return [charm.getPeHost(pe) for pe in range(npes)]


def walk(root, pes, bfactor):
    """The tree from getTopoTreeEdges: every PE once, parents consistent."""
    order, stack = [], [(root, None)]
    while stack:
        pe, par = stack.pop()
        parent, children = charm.getTopoTreeEdges(pe, root, pes, bfactor=bfactor)
        assert parent == par, (pe, parent, par)
        assert len(children) <= 2 * bfactor
        order.append(pe)
        stack += [(c, pe) for c in children]
    return order


def check_trees():
    npes = charm.numPes()
    hosts = [charm.getPeHost(pe) for pe in range(npes)]
    for bfactor in (1, 2, 4):
        for root in range(npes):
            order = walk(root, None, bfactor)
            assert sorted(order) == list(range(npes))
            # one edge into each host other than the root's
            cross = 0
            for pe in range(npes):
                parent, _ = charm.getTopoTreeEdges(pe, root, None, bfactor)
                if parent is not None and hosts[parent] != hosts[pe]:
                    cross += 1
            assert cross == charm.numHosts() - 1, (cross, charm.numHosts())
        evens = [pe for pe in range(npes) if pe % 2 == 0]
        evens.insert(0, evens.pop())
        assert sorted(walk(evens[0], evens, bfactor)) == sorted(evens)

    def explore(root, pes, found):
        for sub in charm.getTopoSubtrees(root, pes, bfactor=2):
            assert len(set(sub)) == len(sub) and not found.intersection(sub)
            found.add(sub[0])
            explore(sub[0], sub, found)
    found = {0}
    explore(0, list(range(npes)), found)
    assert sorted(found) == list(range(npes))
    try:
        charm.getTopoTreeEdges(0, 1, [0, 1])
        raise AssertionError("a root that is not first was accepted")
    except ValueError:
        pass


class Probe(Chare):
    def view(self):
        return check_hosts()


def main(args):
    mine = check_hosts()
    check_trees()
    views = Group(Probe).view(ret=True).get()
    assert all(v == mine for v in views), "every PE sees the same hosts"
    if len(args) > 1:
        assert charm.numHosts() == int(args[1]), (charm.numHosts(), args[1])
    print(f"hosts {charm.numHosts()}: " + " ".join(str(charm.getHostPes(h)) for h in range(charm.numHosts())))
    print("ok")
    exit()


charm.start(main)
