"""The agent as it ships: the stripped files in one bundle, and the bootstrap that runs it only on a hash match."""

from __future__ import annotations

import ast
import base64
import io
import subprocess
import sys
import tokenize

from hyperpod_inference.charts.agent_bundle import (
    AGENT_BUNDLE,
    AGENT_MOUNT,
    EXIT_CODE_MISMATCH,
    agent_bundle,
    agent_code_hash,
    agent_command,
    shipped_source_files,
    strip_source,
)
from hyperpod_inference.nvme_agent import agent_source_files


def test_the_shipped_code_is_at_most_half_the_previous_template_cost():
    # GIVEN the bytes the agent adds to a namespace's template: the base64 of its bundle
    shipped = len(base64.b64encode(agent_bundle()))
    full = sum(len(t.encode()) for t in agent_source_files().values())

    # THEN it is at most half of the 99,467 bytes the full source took, and stripping kept every file compilable
    print(f"agent ConfigMap payload: {shipped} bytes (full source {full} bytes)")
    assert shipped <= 99_467 // 2
    for name, text in shipped_source_files().items():
        tree = ast.parse(text, name)
        assert ast.get_docstring(tree) is None and "#" not in text.split("\n", 1)[0], name


def test_strip_source_drops_docstrings_comments_and_blank_lines_but_keeps_strings():
    # GIVEN code with a module, class and function docstring, comments, blank lines and a multi-line string
    text = '"""Module."""\nimport os  # why\n\n\nclass A:\n    """Doc."""\n\n    def f(self):\n        """Only a doc."""\n' \
        '\nX = """a\n\nb"""  # keep the blank line inside\n'

    # WHEN it is stripped
    out = strip_source(text)

    # THEN only code is left, the function body is a pass, and the string keeps its blank line
    assert out == 'import os\nclass A:\n    def f(self):\n        pass\nX = """a\n\nb"""\n'
    namespace = {}
    exec(out, namespace)
    assert namespace["X"] == "a\n\nb"


def test_strip_source_drops_the_docstrings_of_classes_and_functions_nested_in_any_statement():
    # GIVEN functions and classes defined inside if/else, try/except/finally, with, for, while and match blocks and
    # inside one another, each with a docstring; and a string that is not a first statement
    text = "\n".join([
        "import contextlib",
        "if True:",
        "    def a():",
        "        \"\"\"A.\"\"\"",
        "        return 1",
        "else:",
        "    def b():",
        "        \"\"\"B.\"\"\"",
        "try:",
        "    class C:",
        "        \"\"\"C.\"\"\"",
        "        def m(self):",
        "            \"\"\"M.\"\"\"",
        "            def inner():",
        "                \"\"\"Inner.\"\"\"",
        "            return 'not a docstring'",
        "except ValueError:",
        "    def e():",
        "        \"\"\"E.\"\"\"",
        "finally:",
        "    def f():",
        "        \"\"\"F.\"\"\"",
        "with contextlib.nullcontext():",
        "    async def g():",
        "        \"\"\"G.\"\"\"",
        "for _ in ():",
        "    def h():",
        "        \"\"\"H.\"\"\"",
        "while False:",
        "    def i():",
        "        \"\"\"I.\"\"\"",
        "match 1:",
        "    case 1:",
        "        def j():",
        "            \"\"\"J.\"\"\"",
        "",
    ])

    # WHEN it is stripped
    out = strip_source(text)

    # THEN no docstring is left anywhere, the other string is kept, and the code still runs
    tree = ast.parse(out)
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    assert sorted(n.name for n in scopes) == ["C", "a", "b", "e", "f", "g", "h", "i", "inner", "j", "m"]
    assert all(ast.get_docstring(n) is None for n in scopes)
    assert "'not a docstring'" in out
    namespace: dict = {}
    exec(out, namespace)
    assert namespace["a"]() == 1 and namespace["C"]().m() == "not a docstring"


def _tokenize_view(text: str) -> tuple[dict[int, int], set[int]]:
    """Where Python's own tokenizer puts comments (line -> column) and which lines it sees inside a string."""
    comments, in_string = {}, set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.start[1]
        elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            in_string.update(range(tok.start[0] + 1, tok.end[0] + 1))
    return comments, in_string


def test_strip_source_finds_comments_where_the_tokenizer_does():
    # GIVEN a "#" inside every kind of string (prefixes, f-strings, escaped quotes, a backslash-continued string, a
    # triple-quoted string over lines with a blank line), next to real comments, and a non-ASCII string before one
    text = (
        'a = "x#y"  # one\n'
        "b = (f'{a}#', rb'\\'#')  # two\n"
        'c = "q\\"#" # three\n'
        "d = 'line\\\n#still' # four\n"
        "e = \'\'\'\n#in\n\n\'\'\'  # five\n"
        'g = ("é#"  # six\n     "h")\n'
        "x = 1#seven\n"
    )
    comments, in_string = _tokenize_view(text)

    # WHEN it is stripped
    out = strip_source(text)

    # THEN exactly the tokenizer's comments are gone (every other line and every string is kept, blank lines inside
    # a string too), and the code still runs to the same values
    lines = text.splitlines(keepends=True)
    expected = "".join(
        (line[:comments[n]].rstrip() + "\n") if n in comments else line
        for n, line in enumerate(lines, 1) if line.strip() or n in in_string)
    assert len(comments) == 7 and out == expected
    before, after = {}, {}
    exec(text, before)
    exec(out, after)
    assert {k: after[k] for k in "abcdegx"} == {k: before[k] for k in "abcdegx"}


def test_the_bootstrap_runs_python_isolated_so_nothing_from_the_working_directory_or_pythonpath_is_imported(
        tmp_path):
    # GIVEN a working directory and a PYTHONPATH folder that each hold a hashlib.py and a zlib.py (what the
    # bootstrap imports before its hash check), which would exit 99 if imported; and the bundle mounted as a file
    for folder in (tmp_path / "cwd", tmp_path / "path"):
        folder.mkdir()
        for module in ("hashlib", "zlib"):
            (folder / f"{module}.py").write_text("raise SystemExit(99)\n")
    bundle = tmp_path / "agent.z"
    bundle.write_bytes(agent_bundle())
    command = agent_command("--help")
    assert command[0] == "python3"

    # WHEN a container runs the command from that directory with that PYTHONPATH (and PYTHONSAFEPATH unset), but
    # names another hash than the bundle's
    argv = [sys.executable, *command[1:]]
    argv[argv.index(agent_code_hash())] = "0" * 64
    argv[argv.index(f"{AGENT_MOUNT}/{AGENT_BUNDLE}")] = str(bundle)
    result = subprocess.run(argv, cwd=tmp_path / "cwd", env={"PYTHONPATH": str(tmp_path / "path")},
                            capture_output=True, text=True, timeout=60)

    # THEN the real hashlib checked the hash and refused it: neither folder's modules ran
    assert result.returncode == EXIT_CODE_MISMATCH, result.stderr
    assert "code hash mismatch" in result.stderr
