"""The NVMe agent as it ships to the pods: the package's files without docstrings or comments
(:func:`shipped_source_files`), in one zlib-compressed Python program that imports them as the ``nvme_agent``
package (:func:`bundle_of`, :func:`agent_bundle`), and the short inline bootstrap every agent container runs
(:data:`BOOTSTRAP`, :func:`agent_command`): it hashes the mounted bundle, runs the agent only when the hash is the one
the pod spec names, and imports the agent from the bytes it hashed. The Kubernetes objects that carry it are
:mod:`.nvme_cache`'s."""

from __future__ import annotations

import ast
import bisect
import functools
import hashlib
import re
import zlib
from collections.abc import Iterator

from ..nvme_agent import agent_source_files

AGENT_MOUNT = "/opt/nvme-agent"  # the code ConfigMap's mount: <AGENT_MOUNT>/<AGENT_BUNDLE>
AGENT_BUNDLE = "agent.z"
EXIT_CODE_MISMATCH = 6


#: A string literal (any prefix, quotes, escapes; a triple-quoted one over lines) or a comment. Scanned left to right,
#: a ``#`` inside a string is part of the string, so every ``comment`` match is a real comment (as ``tokenize`` finds
#: them, at C speed: the agent's files are stripped on every synth).
_STRING_OR_COMMENT = re.compile("|".join([
    r"(?P<string>[rRbBuUfF]{0,2}(?:" + "|".join([
        r"'''(?:\\.|[^\\])*?'''",
        r'"""(?:\\.|[^\\])*?"""',
        r"'(?:\\.|[^\\'\n])*'",
        r'"(?:\\.|[^\\"\n])*"',
    ]) + "))",
    r"(?P<comment>#[^\n]*)",
]), re.S)


_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _scopes(tree: ast.Module) -> Iterator[ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module and every class and function in it, found through statements only (a docstring is the first
    statement of one of these; expressions, most of the tree, cannot hold one)."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        for field in _STATEMENT_LISTS:
            todo.extend(getattr(node, field, ()))


def strip_source(text: str) -> str:
    """``text`` without docstrings, comments and blank lines (outside strings); every other line is unchanged, so
    the code runs on any Python that runs the original."""
    replace: dict[int, str | None] = {}
    for node in _scopes(ast.parse(text)):
        body = node.body
        if not body:
            continue
        first = body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            for line in range(first.lineno, (first.end_lineno or first.lineno) + 1):
                replace[line] = None
            if len(body) == 1:  # a body of only a docstring still needs a statement
                replace[first.lineno] = " " * first.col_offset + "pass\n"
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    comments: dict[int, int] = {}  # line number -> column of its comment
    in_string: set[int] = set()  # the lines after the first of a string over several lines
    for match in _STRING_OR_COMMENT.finditer(text):
        number = bisect.bisect_right(starts, match.start())
        if match.lastgroup == "comment":
            comments[number] = match.start() - starts[number - 1]
        else:
            last = bisect.bisect_right(starts, match.end() - 1)
            in_string.update(range(number + 1, last + 1))
    out = []
    for number, line in enumerate(lines, 1):
        if number in replace:
            if replace[number] is not None:
                out.append(replace[number])
            continue
        if number in comments:
            line = line[:comments[number]].rstrip() + "\n"
        if line.strip() or number in in_string:
            out.append(line)
    return "".join(out)


def shipped_source_files() -> dict[str, str]:
    """The agent's files as they ship: without docstrings or comments."""
    return {name: strip_source(text) for name, text in agent_source_files().items()}


#: What the bundle runs once the bootstrap has checked its hash: the files (``F``) imported as the ``nvme_agent``
#: package from the very bytes that were hashed (nothing is read again), run as ``python -m nvme_agent <args>``.
_LOADER = "\n".join([
    "import runpy,sys,importlib.util as u",
    "class L:",
    " def __init__(s,k):s.k=k",
    " def create_module(s,p):return None",
    " def get_code(s,n):return compile(F[s.k],'nvme_agent/'+s.k,'exec')",
    " def exec_module(s,m):exec(s.get_code(m.__name__),m.__dict__)",
    " def is_package(s,n):return s.k=='__init__.py'",
    "class M:",
    " def find_spec(s,n,p=None,t=None):",
    "  k='__init__.py' if n=='nvme_agent' else n[11:]+'.py' if n.startswith('nvme_agent.') else ''",
    "  return u.spec_from_loader(n,L(k),origin='nvme_agent/'+k,is_package=k=='__init__.py') if k in F else None",
    "sys.meta_path.insert(0,M())",
    "sys.argv=['nvme_agent']+sys.argv[3:]",
    "runpy.run_module('nvme_agent',run_name='__main__',alter_sys=True)",
    "",
])


def bundle_of(files: dict[str, str]) -> bytes:
    """``files`` (name -> source) as a bundle: one zlib-compressed Python program that imports them as the
    ``nvme_agent`` package and runs it (deterministic: the same files give the same bytes)."""
    return zlib.compress(f"F={dict(sorted(files.items()))!r}\n{_LOADER}".encode(), 9)


def bundle_files(bundle: bytes) -> dict[str, str]:
    """The files a bundle carries (the inverse of :func:`bundle_of`)."""
    head = zlib.decompress(bundle).decode().split("\n", 1)[0]
    return ast.literal_eval(head[len("F="):])


@functools.cache
def agent_bundle() -> bytes:
    """The shipped files as one bundle (:func:`bundle_of`)."""
    return bundle_of(shipped_source_files())


def agent_code_hash() -> str:
    return hashlib.sha256(agent_bundle()).hexdigest()


# Hashes the mounted bundle and runs it only on a match (it then imports the agent from the bytes it hashed), else
# exits 6 naming the mismatch. Kept short: it is in every agent container's command. argv: <sha256> <bundle> <args...>
BOOTSTRAP = "\n".join([
    "import hashlib,sys,zlib",
    "d=open(sys.argv[2],'rb').read()",
    "if hashlib.sha256(d).hexdigest()!=sys.argv[1]:print('nvme-agent: code hash mismatch',"
    f"file=sys.stderr);sys.exit({EXIT_CODE_MISMATCH})",
    "exec(zlib.decompress(d))",
])


#: The interpreter and its flags: ``-I`` (isolated) so that nothing from the working directory, a ``PYTHON*``
#: variable (``PYTHONPATH``, ``PYTHONSTARTUP``, ...) or the user's site-packages is imported before the hash check:
#: the bootstrap's own imports (hashlib, zlib) come from the image's standard library only.
PYTHON = ("python3", "-I")


def agent_command(*args: str) -> list[str]:
    """The container command running the agent with ``args`` through the bootstrap, pinned to the code's hash."""
    return [*PYTHON, "-c", BOOTSTRAP, agent_code_hash(), f"{AGENT_MOUNT}/{AGENT_BUNDLE}", *args]
