"""tools/runtime_architectures.py builds the runtime tables from the runtimes' own source trees (here, small trees
shaped like vLLM's, SGLang's and TGI's), and the committed table belongs to the preset images' versions."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from hyperpod_inference.facts import runtime_architectures as committed
from hyperpod_inference.facts.runtimes import PRESETS

from ..docs.helpers import REPO, tool

VLLM_REGISTRY = '''
import sys
_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "Qwen2ForCausalLM": ("qwen2", "Qwen2ForCausalLM"),
    "MistralForCausalLM": ("llama", "LlamaForCausalLM"),
}
_EMBEDDING_MODELS = {
    "BertModel": ("bert", "BertEmbeddingModel"),
    "GPT2ForSequenceClassification": ("gpt2", "GPT2ForSequenceClassification"),
    **{k: (mod, arch) for k, (mod, arch) in _TEXT_GENERATION_MODELS.items() if arch == "LlamaForCausalLM"},
}
_CROSS_ENCODER_MODELS = {"BertForSequenceClassification": ("bert", "BertForSequenceClassification")}
_MULTIMODAL_MODELS = {"UltravoxModel": ("ultravox", "UltravoxModel")}
_SPECULATIVE_DECODING_MODELS = {"MedusaModel": ("medusa", "Medusa")}
_TRANSFORMERS_SUPPORTED_MODELS = {}
_TRANSFORMERS_BACKEND_MODELS = {"TransformersEmbeddingModel": ("transformers", "TransformersEmbeddingModel")}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS, **_EMBEDDING_MODELS, **_CROSS_ENCODER_MODELS, **_MULTIMODAL_MODELS,
    **_SPECULATIVE_DECODING_MODELS, **_TRANSFORMERS_SUPPORTED_MODELS, **_TRANSFORMERS_BACKEND_MODELS,
}
_SUBPROCESS_COMMAND = [sys.executable, "-m", "vllm.model_executor.models.registry"]
_PREVIOUSLY_SUPPORTED_MODELS = {"MllamaForConditionalGeneration": "0.10.2"}
'''
VLLM_MODEL_CONFIG = '''
_SUFFIX_TO_DEFAULTS: list[tuple[str, tuple[RunnerType, ConvertType]]] = [
    ("ForCausalLM", ("generate", "none")),
    ("EmbeddingModel", ("pooling", "embed")),
    ("ForSequenceClassification", ("pooling", "classify")),
    ("Model", ("pooling", "embed")),
]

def verify_with_parallel_config(self, parallel_config):
    total_num_attention_heads = self.model_arch_config.total_num_attention_heads
    if total_num_attention_heads % tensor_parallel_size != 0:
        raise ValueError("...")
'''
LINEAR = '''
class QKVParallelLinear:
    def __init__(self):
        self.num_heads = divide(self.total_num_heads, tp_size)
        if tp_size >= self.total_num_kv_heads:
            self.num_kv_heads = 1
'''
ALL_REDUCE = "class CustomAllreduce:\n    _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]\n"
SGLANG_MODEL_CONFIG = '''
def is_generation_model(model_architectures, is_embedding=False):
    if (
        "BertModel" in model_architectures
        or "Qwen2ForRewardModel" in model_architectures
        or "NotRegisteredModel" in model_architectures
    ):
        return False
    return not is_embedding
'''
TGI_MODELS = '''
import enum

class ModelType(enum.Enum):
    LLAMA = {"type": "llama", "name": "Llama", "url": "https://huggingface.co/collections/meta-llama"}
    QWEN2 = {"type": "qwen2", "name": "Qwen 2", "url": "https://huggingface.co/collections/Qwen"}

__GLOBALS = locals()
'''
TGI_LLAMA = '''
class FlashLlamaAttention:
    def __init__(self, config, weights):
        if self.num_heads % weights.process_group.size() != 0:
            raise ValueError("`num_heads` must be divisible by `num_shards`")
        if config.num_key_value_heads % weights.process_group.size() != 0:
            raise ValueError("`num_key_value_heads` must be divisible by `num_shards`")
'''


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


@pytest.fixture
def trees(tmp_path):
    vllm = write(tmp_path / "vllm-src", {
        "PKG-INFO": "Metadata-Version: 2.1\nName: vllm\nVersion: 0.14.0\n",
        "vllm/model_executor/models/registry.py": VLLM_REGISTRY,
        "vllm/config/model.py": VLLM_MODEL_CONFIG,
        "vllm/model_executor/layers/linear.py": LINEAR,
        "vllm/distributed/device_communicators/custom_all_reduce.py": ALL_REDUCE,
    })
    sglang = write(tmp_path / "sglang-src", {
        "sglang-0.5.8.dist-info/METADATA": "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.8\n",
        "sglang/srt/models/llama.py": "class LlamaForCausalLM:\n    pass\n\nEntryClass = LlamaForCausalLM\n",
        "sglang/srt/models/bert.py": ("\ufeffclass BertModel:\n    pass\n\nclass Other:\n    pass\n\n"
                                      "EntryClass = [BertModel]\n"),
        "sglang/srt/models/qwen2_rm.py": "class Qwen2ForRewardModel:\n    pass\n\nEntryClass = [Qwen2ForRewardModel]\n",
        "sglang/srt/models/registry.py": "import importlib\n",
        "sglang/srt/models/deepseek_common/__init__.py": "class Hidden:\n    pass\n\nEntryClass = Hidden\n",
        "sglang/srt/configs/model_config.py": SGLANG_MODEL_CONFIG,
        "sglang/srt/layers/linear.py": LINEAR,
        "sglang/srt/distributed/device_communicators/custom_all_reduce.py": ALL_REDUCE,
    })
    tgi = write(tmp_path / "tgi-src", {
        "server/text_generation_server/models/__init__.py": TGI_MODELS,
        "server/text_generation_server/models/custom_modeling/flash_llama_modeling.py": TGI_LLAMA,
    })
    return vllm, sglang, tgi


def test_vllm_architectures_get_the_task_of_the_dict_they_are_listed_in(trees):
    # GIVEN a vLLM registry with generation, embedding, cross-encoder, multimodal, draft and removed architectures
    tables = tool("runtime_architectures").build(*trees, tgi_version="3.3.4")
    vllm = tables["vllm"]
    # THEN generation dicts give generate; one also listed as an embedding model keeps generate first
    assert vllm["served"]["Qwen2ForCausalLM"] == ["generate"]
    assert vllm["served"]["LlamaForCausalLM"] == ["generate", "embed"]
    assert vllm["served"]["MistralForCausalLM"] == ["generate", "embed"]  # via the dict comprehension
    assert vllm["served"]["UltravoxModel"] == ["generate"]  # multimodal, although the name reads as pooling
    # AND pooling dicts give the suffix rule's conversion, else embed / classify by dict
    assert vllm["served"]["BertModel"] == ["embed"]
    assert vllm["served"]["GPT2ForSequenceClassification"] == ["classify"]
    assert vllm["served"]["BertForSequenceClassification"] == ["classify"]
    assert vllm["served"]["TransformersEmbeddingModel"] == ["embed"]
    # AND draft heads are draft, removed architectures keep the last version that served them
    assert vllm["served"]["MedusaModel"] == ["draft"]
    assert vllm["removed"] == {"MllamaForConditionalGeneration": "0.10.2"}
    assert (vllm["version"], vllm["keys_on"]) == ("0.14.0", "architectures")
    assert vllm["suffix_tasks"][:2] == [("ForCausalLM", "generate"), ("EmbeddingModel", "embed")]


def test_tensor_parallel_rules_are_cited_at_the_lines_that_state_them(trees):
    # GIVEN the trees WHEN built THEN each rule names the file and line it was found at
    tables = tool("runtime_architectures").build(*trees, tgi_version="3.3.4")
    assert tables["vllm"]["tensor_parallel_sources"] == {
        "attention_heads": "vllm/config/model.py:11",
        "kv_heads": "vllm/model_executor/layers/linear.py:5",
        "custom_all_reduce_sizes": "vllm/distributed/device_communicators/custom_all_reduce.py:2",
    }
    assert tables["vllm"]["custom_all_reduce_sizes"] == [2, 4, 6, 8]
    assert tables["sglang"]["tensor_parallel_sources"]["attention_heads"] == "sglang/srt/layers/linear.py:4"
    assert tables["tgi"]["tensor_parallel_sources"] == {
        "attention_heads": "server/text_generation_server/models/custom_modeling/flash_llama_modeling.py:4",
        "kv_heads": "server/text_generation_server/models/custom_modeling/flash_llama_modeling.py:6",
    }


def test_sglang_registers_entry_classes_of_modules_and_marks_non_generating_ones(trees):
    # GIVEN SGLang modules (one with a byte-order mark), a registry without EntryClass and a sub-package
    tables = tool("runtime_architectures").build(*trees, tgi_version="3.3.4")
    sglang = tables["sglang"]
    # THEN every EntryClass of a module is served, sub-packages are not read (SGLang's registry skips them)
    assert sglang["served"] == {"BertModel": ["embed"], "LlamaForCausalLM": ["generate"],
                                "Qwen2ForRewardModel": ["classify"]}
    assert sglang["version"] == "0.5.8"
    assert "sglang/srt/models/*.py (4 files)" in sglang["sources"]


def test_tgi_serves_the_model_types_of_its_model_type_enum(trees):
    tables = tool("runtime_architectures").build(*trees, tgi_version="3.3.4")
    assert tables["tgi"]["served"] == {"llama": ["generate"], "qwen2": ["generate"]}
    assert (tables["tgi"]["keys_on"], tables["tgi"]["version"]) == ("model_type", "3.3.4")


def test_every_file_read_is_recorded_with_its_digest(trees):
    import hashlib

    tables = tool("runtime_architectures").build(*trees, tgi_version="3.3.4")
    registry = trees[0] / "vllm/model_executor/models/registry.py"
    assert tables["vllm"]["sources"]["vllm/model_executor/models/registry.py"] == \
        "sha256:" + hashlib.sha256(registry.read_bytes()).hexdigest()


def test_a_registry_dict_the_tool_does_not_classify_is_an_error_not_a_silent_gap(trees, capsys):
    # GIVEN a vLLM registry whose union holds an architecture of a dict the tool does not read
    registry = trees[0] / "vllm/model_executor/models/registry.py"
    registry.write_text(registry.read_text().replace(
        "_VLLM_MODELS = {", '_NEW_KIND_MODELS = {"NewForX": ("new", "NewForX")}\n_VLLM_MODELS = {**_NEW_KIND_MODELS, '))
    # WHEN the tool runs THEN it exits 2 naming the architecture, without a traceback
    mod = tool("runtime_architectures")
    code = mod.main(["--vllm", str(trees[0]), "--sglang", str(trees[1]), "--tgi", str(trees[2]),
                     "--tgi-version", "3.3.4", "--output", str(trees[0] / "out.py")])
    err = capsys.readouterr().err
    assert code == 2 and "NewForX" in err and "Traceback" not in err


def test_a_source_without_the_rule_line_is_an_error(trees, capsys):
    (trees[2] / "server/text_generation_server/models/custom_modeling/flash_llama_modeling.py").write_text("pass\n")
    mod = tool("runtime_architectures")
    code = mod.main(["--vllm", str(trees[0]), "--sglang", str(trees[1]), "--tgi", str(trees[2]),
                     "--tgi-version", "3.3.4", "--output", str(trees[0] / "out.py")])
    assert code == 2 and "flash_llama_modeling.py" in capsys.readouterr().err


def test_check_reports_a_stale_table_and_accepts_a_fresh_one(trees, tmp_path):
    # GIVEN a table written by the tool
    mod = tool("runtime_architectures")
    out = tmp_path / "table.py"
    args = ["--vllm", str(trees[0]), "--sglang", str(trees[1]), "--tgi", str(trees[2]), "--tgi-version", "3.3.4",
            "--output", str(out)]
    assert mod.main(args) == 0
    # THEN --check accepts it, and the written module is valid Python with the tables
    assert mod.main([*args, "--check"]) == 0
    namespace: dict = {}
    exec(compile(out.read_text(), str(out), "exec"), namespace)
    assert namespace["TGI"]["served"] == {"llama": ("generate",), "qwen2": ("generate",)}
    # WHEN the table is edited THEN --check reports it stale and writes nothing
    out.write_text(out.read_text().replace('"qwen2"', '"qwen3"'))
    stale = out.read_text()
    assert mod.main([*args, "--check"]) == 1
    assert out.read_text() == stale


def test_the_committed_table_is_for_the_versions_of_the_preset_images():
    # GIVEN the presets' image tags WHEN compared with the versions the table was built from THEN they agree (a
    # preset bump without regenerating the table fails here)
    assert PRESETS["vllm"].tag.startswith(committed.VLLM["version"] + "-")
    assert PRESETS["sglang"].tag.startswith(committed.SGLANG["version"] + "-")
    assert f"-tgi{committed.TGI['version']}-" in PRESETS["tgi"].tag


SOURCES_ENV = "HYPERPOD_RUNTIME_SOURCES"


@pytest.mark.skipif(not os.environ.get(SOURCES_ENV),
                    reason=f"set {SOURCES_ENV} to a folder holding vllm-<v>/, sglang-<v>/ and tgi/ source trees")
def test_the_committed_table_is_what_the_tool_builds_from_the_real_sources():
    # GIVEN the runtimes' source trees at the preset versions WHEN the tool runs with --check THEN nothing differs
    root = Path(os.environ[SOURCES_ENV])
    args = ["--vllm", str(root / f"vllm-{committed.VLLM['version']}"),
            "--sglang", str(root / f"sglang-{committed.SGLANG['version']}"),
            "--tgi", str(root / "tgi"), "--tgi-version", committed.TGI["version"],
            "--output", str(REPO / "hyperpod_inference/facts/runtime_architectures.py"), "--check"]
    assert tool("runtime_architectures").main(args) == 0
