"""charm4py's `wait` module: the kinds of @when conditions and parse_cond_str, which tells
them apart. ucharm's @when (coroutines.when) decides from the same three kinds; this module
is for programs that import the names (`from charm4py import wait`):

  MsgTagCond         self.ATTR == ARG: a call waits under the value of one argument
                     (matched through a table, the fast form)
  ChareStateMsgCond  any other condition that reads the call's arguments
  ChareStateCond     a condition over the chare only (self.ready, self.x + self.y == 3)
"""
import ast
from importlib import import_module

__all__ = ["MsgTagCond", "ChareStateMsgCond", "ChareStateCond", "parse_cond_str"]


class MsgTagCond:
    """`self.<attrib_name> == <argument arg_idx>`."""
    group = True

    def __init__(self, cond_str, attrib_name, arg_idx):
        self.cond_str, self.attrib_name, self.arg_idx = cond_str, attrib_name, arg_idx

    def evaluateWhen(self, obj, args):
        return args[self.arg_idx] == getattr(obj, self.attrib_name)

    def __repr__(self):
        return f"MsgTagCond(self.{self.attrib_name} == args[{self.arg_idx}])"


class ChareStateMsgCond:
    """A condition over the chare and the call's arguments."""
    group = False

    def __init__(self, cond_str, module_name, method_args):
        self.cond_str, self.module_name = cond_str, module_name
        self.arg_names = [n for n, _ in sorted(method_args.items(), key=lambda kv: kv[1])]
        self._compile()

    def _compile(self):
        params = ", ".join(["self"] + self.arg_names)
        self.cond_func = eval(f"lambda {params}: ({self.cond_str})", vars(import_module(self.module_name)))

    def evaluateWhen(self, obj, args):
        return self.cond_func(obj, *args[:len(self.arg_names)])

    def __getstate__(self):
        return self.cond_str, self.module_name, self.arg_names

    def __setstate__(self, state):
        self.cond_str, self.module_name, self.arg_names = state
        self._compile()

    def __repr__(self):
        return f"ChareStateMsgCond({self.cond_str!r})"


class ChareStateCond:
    """A condition over the chare only."""
    group = True

    def __init__(self, cond_str, module_name):
        self.cond_str, self.globals_module_name = cond_str, module_name
        self._compile()

    def _compile(self):
        self.cond_func = eval(f"lambda self: ({self.cond_str})", vars(import_module(self.globals_module_name)))

    def evaluateWhen(self, obj, args=None):
        return self.cond_func(obj)

    def __getstate__(self):
        return self.cond_str, self.globals_module_name

    def __setstate__(self, state):
        self.cond_str, self.globals_module_name = state
        self._compile()

    def __repr__(self):
        return f"ChareStateCond({self.cond_str!r})"


def _self_attr(node):
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def parse_cond_str(cond_str, module_name, method_args):
    """The condition object of a @when string. method_args: {argument name: its position,
    self not counted}."""
    cond_str = cond_str.strip()
    try:
        tree = ast.parse(cond_str, mode="eval")
    except SyntaxError as e:
        raise SyntaxError(f"@when condition {cond_str!r}: {e.msg}") from None
    body = tree.body
    if isinstance(body, ast.Compare) and len(body.ops) == 1 and isinstance(body.ops[0], ast.Eq):
        left, right = body.left, body.comparators[0]
        for a, b in ((left, right), (right, left)):
            attr = _self_attr(a)
            if attr is not None and isinstance(b, ast.Name) and b.id in method_args:
                return MsgTagCond(cond_str, attr, method_args[b.id])
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    if names & set(method_args):
        return ChareStateMsgCond(cond_str, module_name, method_args)
    return ChareStateCond(cond_str, module_name)
