"""Rebuild hyperpod_inference/facts/runtime_architectures.py from the model servers' own source trees: the
``config.json`` architectures (or, for TGI, model types) each runtime preset serves, the task each serves them for,
and where each runtime states its tensor-parallel rules. The sources are read with ``ast`` and regular expressions,
never imported or executed.

    python tools/runtime_architectures.py --vllm DIR --sglang DIR --tgi DIR --tgi-version 3.3.4
    python tools/runtime_architectures.py ... --check    # exit 1 when the committed table differs

DIR is the folder that holds the package: ``--vllm`` the vLLM sdist (``vllm/`` and ``PKG-INFO``), ``--sglang`` an
unpacked SGLang wheel (``sglang/`` and ``sglang-<version>.dist-info``), ``--tgi`` a text-generation-inference checkout
(``server/text_generation_server``). vLLM's and SGLang's versions are read from their metadata; TGI's server tree
carries none, so ``--tgi-version`` names it.

What is read:
- vLLM: ``vllm/model_executor/models/registry.py``, its dicts of architectures by kind (text generation, multimodal,
  embedding, cross-encoder, speculative decoding, Transformers backend) and the architectures it no longer supports;
  ``vllm/config/model.py``, the suffix rules (``_SUFFIX_TO_DEFAULTS``) by which vLLM picks the runner and conversion of
  an architecture it does not register. A registered architecture's task comes from the dict it is in (generation
  dicts: ``generate``; a pooling dict: the suffix rule's conversion, else ``embed`` for embedding models and
  ``classify`` for cross-encoders); speculative-decoding heads are ``draft`` (never served alone).
- SGLang: every module of ``sglang/srt/models/`` (not its sub-packages, as SGLang's registry imports them): the
  classes named by ``EntryClass`` (SGLang registers each by its class name); ``sglang/srt/configs/model_config.py``,
  the architectures ``is_generation_model`` names as not generating (``classify`` when the name says classification
  or reward, else ``embed``).
- TGI: ``server/text_generation_server/models/__init__.py``, the ``type`` of every ``ModelType`` member (TGI
  dispatches on ``config.json``'s ``model_type``, and its supported-models page is built from this enum); all are
  text generation.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "hyperpod_inference" / "facts" / "runtime_architectures.py"

VLLM_REGISTRY = "vllm/model_executor/models/registry.py"
VLLM_MODEL_CONFIG = "vllm/config/model.py"
VLLM_LINEAR = "vllm/model_executor/layers/linear.py"
VLLM_ALL_REDUCE = "vllm/distributed/device_communicators/custom_all_reduce.py"
SGLANG_MODELS = "sglang/srt/models"
SGLANG_MODEL_CONFIG = "sglang/srt/configs/model_config.py"
SGLANG_LINEAR = "sglang/srt/layers/linear.py"
SGLANG_ALL_REDUCE = "sglang/srt/distributed/device_communicators/custom_all_reduce.py"
TGI_MODELS = "server/text_generation_server/models/__init__.py"
TGI_LLAMA = "server/text_generation_server/models/custom_modeling/flash_llama_modeling.py"

_GENERATION_DICTS = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS", "_TRANSFORMERS_SUPPORTED_MODELS")
_POOLING_DICTS = {"_EMBEDDING_MODELS": "embed", "_CROSS_ENCODER_MODELS": "classify"}
_DRAFT_DICT = "_SPECULATIVE_DECODING_MODELS"
_BACKEND_DICT = "_TRANSFORMERS_BACKEND_MODELS"
_REMOVED_DICT = "_PREVIOUSLY_SUPPORTED_MODELS"


class SourceError(Exception):
    """A source file is missing or no longer has the shape this tool reads: update the tool with the runtime."""


class Source:
    """One runtime's source tree: files read relative to ``root``, each recorded with its sha256."""

    def __init__(self, root: Path):
        self.root = root
        self.read_files: dict[str, str] = {}

    def text(self, rel: str) -> str:
        path = self.root / rel
        if not path.is_file():
            raise SourceError(f"{path}: not found (is {self.root} the right source tree?)")
        data = path.read_bytes()
        self.read_files[rel] = "sha256:" + hashlib.sha256(data).hexdigest()
        return data.decode("utf-8-sig")

    def tree(self, rel: str) -> ast.Module:
        return ast.parse(self.text(rel), filename=rel)

    def line_of(self, rel: str, pattern: str) -> str:
        """``rel:<line>`` of the one line matching ``pattern``; SourceError when none or several do."""
        lines = [i for i, line in enumerate(self.text(rel).splitlines(), 1) if re.search(pattern, line)]
        if len(lines) != 1:
            raise SourceError(f"{rel}: expected one line matching {pattern!r}, found {len(lines)}")
        return f"{rel}:{lines[0]}"


# --- a small evaluator for the registry's dict literals (no eval) ---------------------------------------------------

def _evaluate(node: ast.expr, names: dict[str, object], rel: str):
    """Constants, tuples, lists, dicts (with ``**`` unpacking), names bound earlier in the module, and the one dict
    comprehension shape vLLM uses (``{k: (m, a) for k, (m, a) in NAME.items() if a == "..."}``)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_evaluate(e, names, rel) for e in node.elts)
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise SourceError(f"{rel}:{node.lineno}: {node.id} is not bound before it is used")
        return names[node.id]
    if isinstance(node, ast.Dict):
        out: dict = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                out.update(_evaluate(value, names, rel))
            else:
                out[_evaluate(key, names, rel)] = _evaluate(value, names, rel)
        return out
    if isinstance(node, ast.DictComp):
        return _dict_comprehension(node, names, rel)
    raise SourceError(f"{rel}:{node.lineno}: unsupported expression {ast.dump(node)[:80]}")


def _dict_comprehension(node: ast.DictComp, names: dict[str, object], rel: str) -> dict:
    (gen,) = node.generators
    it = gen.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items"
            and isinstance(it.func.value, ast.Name) and not it.args):
        raise SourceError(f"{rel}:{node.lineno}: unsupported comprehension source")
    source = _evaluate(it.func.value, names, rel)
    out = {}
    for key, value in source.items():
        scope = dict(names)
        _bind(gen.target, (key, value), scope, rel)
        if all(_condition(cond, scope, rel) for cond in gen.ifs):
            out[_evaluate(node.key, scope, rel)] = _evaluate(node.value, scope, rel)
    return out


def _bind(target: ast.expr, value, scope: dict, rel: str) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
    elif isinstance(target, ast.Tuple) and len(target.elts) == len(value):
        for t, v in zip(target.elts, value, strict=True):
            _bind(t, v, scope, rel)
    else:
        raise SourceError(f"{rel}:{target.lineno}: unsupported comprehension target")


def _condition(node: ast.expr, scope: dict, rel: str) -> bool:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
        left, right = _evaluate(node.left, scope, rel), _evaluate(node.comparators[0], scope, rel)
        return (left == right) if isinstance(node.ops[0], ast.Eq) else (left != right)
    raise SourceError(f"{rel}:{node.lineno}: unsupported comprehension condition")


def _module_assignments(tree: ast.Module, rel: str) -> dict[str, object]:
    """Every top-level ``NAME = <literal>`` / ``NAME: T = <literal>`` the evaluator understands, in order."""
    names: dict[str, object] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target.id, stmt.value
        else:
            continue
        try:
            names[target] = _evaluate(value, names, rel)
        except SourceError:
            continue  # not a literal this tool reads (only the names it needs must evaluate)
    return names


def _need(names: dict[str, object], name: str, rel: str):
    if name not in names:
        raise SourceError(f"{rel}: no literal {name} (the registry changed shape)")
    return names[name]


# --- vLLM ----------------------------------------------------------------------------------------------------------

def suffix_tasks(src: Source) -> list[tuple[str, str]]:
    """vLLM's ``_SUFFIX_TO_DEFAULTS`` as (suffix, task): the runner ``generate`` is the task ``generate``; a pooling
    runner's task is its conversion (``embed`` / ``classify``)."""
    names = _module_assignments(src.tree(VLLM_MODEL_CONFIG), VLLM_MODEL_CONFIG)
    rules = _need(names, "_SUFFIX_TO_DEFAULTS", VLLM_MODEL_CONFIG)
    return [(suffix, "generate" if runner == "generate" else convert) for suffix, (runner, convert) in rules]


def _suffix_task(arch: str, rules: list[tuple[str, str]], pooling: bool) -> str | None:
    for suffix, task in rules:
        if arch.endswith(suffix) and (task != "generate") == pooling:
            return task
    return None


def vllm_table(src: Source, version: str) -> dict:
    names = _module_assignments(src.tree(VLLM_REGISTRY), VLLM_REGISTRY)
    rules = suffix_tasks(src)
    served: dict[str, list[str]] = {}

    def add(arch: str, task: str) -> None:
        tasks = served.setdefault(arch, [])
        if task not in tasks:
            tasks.append(task)

    for name in _GENERATION_DICTS:
        for arch in _need(names, name, VLLM_REGISTRY):
            add(arch, "generate")
    for name, fallback in _POOLING_DICTS.items():
        for arch in _need(names, name, VLLM_REGISTRY):
            add(arch, _suffix_task(arch, rules, pooling=True) or fallback)
    for arch in _need(names, _BACKEND_DICT, VLLM_REGISTRY):
        add(arch, _suffix_task(arch, rules, pooling=False) or _suffix_task(arch, rules, pooling=True) or "generate")
    for arch in _need(names, _DRAFT_DICT, VLLM_REGISTRY):
        if arch not in served:
            add(arch, "draft")
    unclassified = set(_need(names, "_VLLM_MODELS", VLLM_REGISTRY)) ^ set(served)
    if unclassified:
        raise SourceError(f"{VLLM_REGISTRY}: _VLLM_MODELS and the dicts read differ on {sorted(unclassified)}")
    removed = {arch: str(v) for arch, v in _need(names, _REMOVED_DICT, VLLM_REGISTRY).items()}
    table = _table("vllm", version, "architectures", served, removed, {
        "attention_heads": src.line_of(VLLM_MODEL_CONFIG, r"total_num_attention_heads % tensor_parallel_size != 0"),
        "kv_heads": src.line_of(VLLM_LINEAR, r"if tp_size >= self\.total_num_kv_heads:"),
    }, _all_reduce_sizes(src, VLLM_ALL_REDUCE))
    return {**table, "suffix_tasks": rules}


def _table(runtime: str, version: str, keys_on: str, served: dict, removed: dict, tp_sources: dict[str, str],
           all_reduce: tuple[str, list[int]] | None = None) -> dict:
    table = {"runtime": runtime, "version": version, "keys_on": keys_on, "served": served, "removed": removed,
             "tensor_parallel_sources": tp_sources}
    if all_reduce is not None:
        tp_sources["custom_all_reduce_sizes"], table["custom_all_reduce_sizes"] = all_reduce
    return table


def _all_reduce_sizes(src: Source, rel: str) -> tuple[str, list[int]]:
    where = src.line_of(rel, r"_SUPPORTED_WORLD_SIZES = \[")
    line = src.text(rel).splitlines()[int(where.rsplit(":", 1)[1]) - 1]
    return where, [int(n) for n in re.findall(r"\d+", line.split("=", 1)[1])]


# --- SGLang --------------------------------------------------------------------------------------------------------

def _entry_classes(tree: ast.Module, rel: str) -> list[str]:
    classes = {stmt.name for stmt in tree.body if isinstance(stmt, ast.ClassDef)}
    entries: list[str] = []
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EntryClass"
                                                     for t in stmt.targets)):
            continue
        value = stmt.value
        for element in value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]:
            if not isinstance(element, ast.Name) or element.id not in classes:
                raise SourceError(f"{rel}:{stmt.lineno}: EntryClass names something other than a class defined here")
            entries.append(element.id)
    return entries


def _not_generating(src: Source) -> set[str]:
    """The architectures ``is_generation_model`` names (``"X" in model_architectures``) as not generating."""
    tree = src.tree(SGLANG_MODEL_CONFIG)
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "is_generation_model"), None)
    if func is None:
        raise SourceError(f"{SGLANG_MODEL_CONFIG}: no is_generation_model function")
    found = {node.left.value for node in ast.walk(func)
             if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
             and isinstance(node.left.value, str) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In)}
    if not found:
        raise SourceError(f"{SGLANG_MODEL_CONFIG}: is_generation_model names no architecture")
    return found


def sglang_table(src: Source, version: str) -> dict:
    models = src.root / SGLANG_MODELS
    if not models.is_dir():
        raise SourceError(f"{models}: not found")
    not_generating = _not_generating(src)
    served: dict[str, list[str]] = {}
    for path in sorted(models.glob("*.py")):
        rel = f"{SGLANG_MODELS}/{path.name}"
        for arch in _entry_classes(src.tree(rel), rel):
            if arch in served:
                raise SourceError(f"{rel}: {arch} is registered twice")
            if arch in not_generating:
                task = "classify" if re.search("Classification|Reward", arch) else "embed"
            else:
                task = "generate"
            served[arch] = [task]
    return _table("sglang", version, "architectures", served, {}, {
        "attention_heads": src.line_of(SGLANG_LINEAR, r"self\.num_heads = divide\(self\.total_num_heads, tp_size\)"),
        "kv_heads": src.line_of(SGLANG_LINEAR, r"if tp_size >= self\.total_num_kv_heads:"),
    }, _all_reduce_sizes(src, SGLANG_ALL_REDUCE))


# --- TGI -----------------------------------------------------------------------------------------------------------

def tgi_table(src: Source, version: str) -> dict:
    tree = src.tree(TGI_MODELS)
    enum = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelType"), None)
    if enum is None:
        raise SourceError(f"{TGI_MODELS}: no ModelType enum")
    served: dict[str, list[str]] = {}
    for stmt in enum.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict):
            member = ast.literal_eval(stmt.value)
            served[member["type"]] = ["generate"]
    if not served:
        raise SourceError(f"{TGI_MODELS}: ModelType has no members")
    return _table("tgi", version, "model_type", served, {}, {
        "attention_heads": src.line_of(TGI_LLAMA, r"if self\.num_heads % weights\.process_group\.size\(\) != 0"),
        "kv_heads": src.line_of(TGI_LLAMA, r"if config\.num_key_value_heads % weights\.process_group\.size\(\) != 0"),
    })


# --- versions and output -------------------------------------------------------------------------------------------

def _metadata_version(files: list[Path], what: str) -> str:
    for path in files:
        match = re.search(r"^Version: (\S+)$", path.read_text(encoding="utf-8"), re.M)
        if match:
            return match.group(1)
    raise SourceError(f"no version metadata for {what}: give it with the --*-version option")


def build(vllm: Path, sglang: Path, tgi: Path, tgi_version: str, vllm_version: str | None = None,
          sglang_version: str | None = None) -> dict[str, dict]:
    tables: dict[str, dict] = {}
    steps: list[tuple[str, Path, Callable[[Source, str], dict], str]] = [
        ("vllm", vllm, vllm_table,
         vllm_version or _metadata_version([vllm / "PKG-INFO"] if (vllm / "PKG-INFO").is_file() else [], "vLLM")),
        ("sglang", sglang, sglang_table,
         sglang_version or _metadata_version(sorted(sglang.glob("sglang-*.dist-info/METADATA")), "SGLang")),
        ("tgi", tgi, tgi_table, tgi_version),
    ]
    for name, root, table_of, version in steps:
        src = Source(root)
        table = table_of(src, version)
        table["sources"] = _sources(src.read_files)
        tables[name] = table
    return tables


def _sources(read_files: dict[str, str]) -> dict[str, str]:
    """Each file read with its sha256; SGLang's model modules as one entry (a digest over their names and digests)."""
    out = {rel: digest for rel, digest in read_files.items() if not rel.startswith(SGLANG_MODELS + "/")}
    models = sorted((rel, digest) for rel, digest in read_files.items() if rel.startswith(SGLANG_MODELS + "/"))
    if models:
        combined = hashlib.sha256("".join(f"{rel} {digest}\n" for rel, digest in models).encode()).hexdigest()
        out[f"{SGLANG_MODELS}/*.py ({len(models)} files)"] = "sha256:" + combined
    return dict(sorted(out.items()))


def _literal(value, indent: int) -> str:
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}    {_literal(key, indent)}: {_literal(val, indent + 4)}," for key, val in value.items()]
        return "{\n" + "\n".join(items) + f"\n{pad}}}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_literal(v, indent) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def render(tables: dict[str, dict]) -> str:
    head = (
        '"""The ``config.json`` architectures (TGI: model types) each runtime preset serves, with the task it serves\n'
        "them for, and where each runtime states its tensor-parallel rules: generated by tools/runtime_architectures.py\n"
        "from each runtime's own source tree (each file read is recorded with its sha256). Do not edit by hand; rerun\n"
        "the tool when a preset's version changes. Stdlib only.\n"
        '"""\n'
    )
    body = [f"\n{name.upper()} = {_literal(table, 0)}\n" for name, table in tables.items()]
    return head + "".join(body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm", type=Path, required=True, help="the vLLM source tree (holds vllm/ and PKG-INFO)")
    parser.add_argument("--sglang", type=Path, required=True, help="the SGLang tree (holds sglang/ and its dist-info)")
    parser.add_argument("--tgi", type=Path, required=True, help="the TGI tree (holds server/text_generation_server)")
    parser.add_argument("--tgi-version", required=True, help="TGI's version (its server tree carries none)")
    parser.add_argument("--vllm-version", help="override the version read from PKG-INFO")
    parser.add_argument("--sglang-version", help="override the version read from the dist-info")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="exit 1 when the output file differs, write nothing")
    args = parser.parse_args(argv)
    try:
        text = render(build(args.vllm, args.sglang, args.tgi, args.tgi_version, args.vllm_version,
                            args.sglang_version))
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.is_file() else ""
        if current != text:
            print(f"{args.output} is stale: rerun without --check", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
