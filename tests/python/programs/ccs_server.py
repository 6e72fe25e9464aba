"""A CCS server job (tests/python/test_ccs.py is its client): handlers on every PE, replies
now, later and from other PEs, broadcasts; "quit" ends the job."""
from ucharm import charm, Chare, Group, Future, Reducer


def ping(msg):
    assert charm.CcsIsRemoteRequest()
    charm.CcsSendReply(f"pong from PE {charm.myPe()}: {msg.decode()}".encode())
    assert not charm.CcsIsRemoteRequest()


def whoami(msg):
    charm.CcsSendReply(charm.myPe().to_bytes(4, "big"))


def silent(msg):
    pass  # no reply: the client gets an empty one


def quit_job(msg):
    charm.CcsSendReply(b"bye")
    charm.exit()


class Handlers(Chare):
    def register(self, done):
        charm.CcsRegisterHandler("ping", ping)
        charm.CcsRegisterHandler("whoami", whoami)
        charm.CcsRegisterHandler("silent", silent)
        charm.CcsRegisterHandler("later", self.later)
        if charm.myPe() == 0:
            charm.CcsRegisterHandler("quit", quit_job)
        self.reduce(done, Reducer.nop)

    def later(self, msg):
        # The reply is kept and sent by the next PE's element.
        token = charm.CcsDelayReply()
        self.thisProxy[(charm.myPe() + 1) % charm.numPes()].answer(token, charm.myPe(), msg)

    def answer(self, token, origin, msg):
        charm.CcsSendDelayedReply(token, f"from {origin} answered by {charm.myPe()}: {msg.decode()}")


def main(args):
    try:
        charm.CcsSendReply(b"x")
    except RuntimeError as e:
        print("outside a handler:", e)
    done = Future()
    Group(Handlers).register(done)
    done.get()
    print("server", charm.CcsServer(), "enabled", charm.CcsEnabled())
    print("CCS handlers registered")


charm.start(main)
