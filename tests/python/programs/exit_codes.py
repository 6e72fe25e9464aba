# How a job ends: sys.exit(n) / exit(n) inside an entry method or the main function,
# charm.exit(n) anywhere. argv[1] picks the case; every case ends with code 3 or 5.
import sys

from ucharm import charm, Chare, Group, Array


class Quitter(Chare):
    def sys_exit(self):
        if self.thisIndex == charm.numPes() - 1:
            sys.exit(3)

    def builtin_exit(self):
        exit(3)

    def charm_exit(self):
        charm.exit(5)

    def sys_exit_no_code(self):
        sys.exit()


def main(args):
    case = args[1]
    g = Group(Quitter)
    charm.awaitCreation(g)
    if case == "sys_exit_entry":
        g.sys_exit()
    elif case == "exit_entry":
        a = Array(Quitter, 2 * charm.numPes())
        a[2 * charm.numPes() - 1].builtin_exit()
    elif case == "charm_exit_entry":
        g[charm.numPes() - 1].charm_exit()
    elif case == "charm_exit_main":
        charm.exit(5)
    elif case == "sys_exit_main":
        sys.exit(3)
    elif case == "sys_exit_zero_entry":
        g[charm.numPes() - 1].sys_exit_no_code()
    else:
        raise ValueError(case)
    # Nothing else ends the job: the exit above must.


charm.start(main)
