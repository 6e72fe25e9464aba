"""An interactive prompt on PE 0 that runs Python on the job (charm4py.interactive):

    ucharmrun -n 4 python -m ucharm.interactive        (or python -m ucharm.interactive)

Each statement runs on PE 0 in the namespace of `__main__`, which holds charm, Chare, Group,
Array, Reducer, Future, coro, ... and `future()` (a new Future, also kept as `_f`, as
charm4py's console has it). Statements may wait (`_f.get()`, proxy calls with ret=True,
charm.sleep): the prompt runs in the main coroutine. Definitions and imports (class, def,
import) run on every PE, so chare classes defined at the prompt can be instantiated anywhere
and imported modules are there too (charm.options.interactive.broadcast_imports = False
keeps imports on PE 0). End of input or exit() ends the job. Errors are printed as Python's
prompt prints them (sys.excepthook), and the prompt goes on.
"""
import ast
import codeop
import sys
import traceback

from . import charm, Chare, Group, Array, ArrayMap, Reducer, Future, coro, threaded, when, Channel

__all__ = ["InteractiveConsole", "main"]


def _future():
    f = Future()
    sys.modules["__main__"].__dict__["_f"] = f
    return f


class InteractiveConsole:
    """Reads statements from stdin on PE 0 and runs them on the job."""

    def __init__(self, namespace=None, stdin=None):
        self.ns = namespace if namespace is not None else sys.modules["__main__"].__dict__
        self.stdin = stdin if stdin is not None else sys.stdin
        self.compile = codeop.CommandCompiler()
        self.options = charm.options.interactive
        self.ns.update({"charm": charm, "Chare": Chare, "Group": Group, "Array": Array, "ArrayMap": ArrayMap,
                        "Reducer": Reducer, "Future": Future, "coro": coro, "threaded": threaded, "when": when,
                        "Channel": Channel, "future": _future})
        self.tty = hasattr(self.stdin, "isatty") and self.stdin.isatty()

    def _readline(self, prompt):
        if self.tty:
            sys.stdout.write(prompt)
            sys.stdout.flush()
        line = self.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    def _everywhere(self, tree):
        """True: every top-level statement defines or imports (run on every PE)."""
        kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if self.options.broadcast_imports:
            kinds += (ast.Import, ast.ImportFrom)
        return bool(tree.body) and all(isinstance(n, kinds) for n in tree.body)

    def run_source(self, source):
        """Runs one complete input. Returns False when the session should end."""
        try:
            code = self.compile(source, "<console>", "single")
        except (SyntaxError, OverflowError, ValueError):
            self._show_error(syntax=True)
            return True
        if code is None:
            return True
        try:
            tree = ast.parse(source)
        except SyntaxError:
            tree = None
        try:
            if tree is not None and self._everywhere(tree) and charm.numPes() > 1:
                # On every PE, PE 0 included, in each one's __main__; waits until all ran it.
                charm.thisProxy.rexec(source, awaitable=True).get()
                if self.options.verbose > 1:
                    print("ucharm> ran on every PE", flush=True)
            else:
                exec(code, self.ns)
        except SystemExit as e:
            self.exit_code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            return False
        except BaseException:
            self._show_error()
        sys.stdout.flush()
        return True

    def _show_error(self, syntax=False):
        t, v, tb = sys.exc_info()
        if not syntax and tb is not None:
            tb = tb.tb_next  # not this module's frame
        sys.last_type, sys.last_value, sys.last_traceback = t, v, tb
        if sys.excepthook is sys.__excepthook__:
            sys.stderr.write("".join(traceback.format_exception(t, v, tb if not syntax else None)))
            sys.stderr.flush()
        else:
            sys.excepthook(t, v, tb)

    def interact(self):
        self.exit_code = 0
        print(f"ucharm interactive shell: {charm.numPes()} PE{'s' if charm.numPes() != 1 else ''}; "
              "statements run on PE 0, definitions and imports on every PE", flush=True)
        buffer = []
        while True:
            try:
                line = self._readline("... " if buffer else ">>> ")
            except EOFError:
                if buffer and not self.run_source("\n".join(buffer) + "\n"):
                    break
                if self.tty:
                    print()
                break
            except KeyboardInterrupt:
                print("\nKeyboardInterrupt")
                buffer = []
                continue
            buffer.append(line)
            source = "\n".join(buffer)
            try:
                complete = self.compile(source, "<console>", "single") is not None
            except (SyntaxError, OverflowError, ValueError):
                complete = True  # run_source reports it
            # Incomplete (codeop): a compound statement goes on until an empty line, as at
            # Python's prompt.
            if complete:
                buffer = []
                if not self.run_source(source + "\n"):
                    break
        sys.stdout.flush()
        sys.stderr.flush()
        charm.exit(self.exit_code)


def _console_main(args):
    InteractiveConsole().interact()


def main():
    charm.start(_console_main)


if __name__ == "__main__":
    main()
