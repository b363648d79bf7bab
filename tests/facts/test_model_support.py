"""Which runtime preset serves a model, for which task, and at which tensor-parallel sizes: from the generated tables
(facts/runtime_architectures.py) and the runtimes' rules as their sources state them."""

from __future__ import annotations

import pytest

from hyperpod_inference.facts import model_support as ms
from hyperpod_inference.facts.runtimes import PRESETS

# config.json of real models (the fields these checks read), as the Hub serves them
QWEN25_7B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_attention_heads": 28,
             "num_key_value_heads": 4}
LLAMA31_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_attention_heads": 32,
              "num_key_value_heads": 8}
LLAMA31_70B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_attention_heads": 64,
               "num_key_value_heads": 8}
BGE_LARGE = {"architectures": ["BertModel"], "model_type": "bert", "num_attention_heads": 16}


def test_every_preset_runtime_has_a_table_and_a_tensor_parallel_rule():
    # GIVEN the runtime presets THEN each has an architecture table, a task and a tensor-parallel rule
    assert set(PRESETS) == set(ms.RUNTIMES) == set(ms.PRESET_TASK) == set(ms.TENSOR_PARALLEL)
    for table in ms.RUNTIMES.values():
        assert table.served and table.sources and table.fallback
        assert {"attention_heads", "kv_heads"} <= set(table.tensor_parallel_sources)


@pytest.mark.parametrize(("runtime", "config"), [
    ("vllm", QWEN25_7B), ("sglang", QWEN25_7B), ("tgi", QWEN25_7B),
    ("vllm", LLAMA31_8B), ("sglang", LLAMA31_8B), ("tgi", LLAMA31_8B),
])
def test_the_presets_serve_qwen_and_llama_for_text_generation(runtime, config):
    # GIVEN a Qwen2.5 / Llama 3.1 config.json WHEN looked up THEN served, and text generation is the default task
    support = ms.runtime_support(runtime, config["architectures"], config["model_type"])
    assert support.status == "served" and support.tasks[0] == "generate"
    assert f"{runtime} {ms.RUNTIMES[runtime].version} serves" in support.reason


def test_tgi_keys_on_the_model_type_not_the_architecture():
    # GIVEN a config whose architecture TGI does not know but whose model type it dispatches on
    support = ms.runtime_support("tgi", ["SomethingNewForCausalLM"], "llama")
    # THEN TGI serves it (it reads model_type), and an unknown model type with a known architecture is unknown
    assert support.status == "served" and support.key == "llama"
    assert ms.runtime_support("tgi", ["LlamaForCausalLM"], "brand_new").status == "unknown"


def test_an_architecture_vllm_dropped_is_unsupported_with_the_last_version_that_served_it():
    support = ms.runtime_support("vllm", ["MllamaForConditionalGeneration"], "mllama")
    assert support.status == "unsupported"
    assert "0.10.2" in support.reason and "vllm 0.14.0" in support.reason


@pytest.mark.parametrize("runtime", ["vllm", "sglang", "tgi"])
def test_an_architecture_no_table_names_is_unknown_and_the_reason_says_what_the_runtime_falls_back_to(runtime):
    # GIVEN an architecture and model type no runtime registers
    support = ms.runtime_support(runtime, ["AcmeQuantumForCausalLM"], "acme_quantum")
    # THEN it is unknown (a warning, not a failure), naming the key and the runtime's fallback
    assert support.status == "unknown" and support.key in ("AcmeQuantumForCausalLM", "acme_quantum")
    assert "Transformers backend" in support.reason or "AutoModelForCausalLM" in support.reason


def test_a_config_without_architectures_is_unknown_not_a_crash():
    assert ms.runtime_support("vllm", [], None).status == "unknown"
    assert ms.runtime_support("tgi", ["LlamaForCausalLM"], None).status == "unknown"


def test_a_later_architecture_of_the_list_is_found_as_vllm_tries_them_in_order():
    support = ms.runtime_support("vllm", ["AcmeForCausalLM", "LlamaForCausalLM"], "llama")
    assert (support.status, support.key) == ("served", "LlamaForCausalLM")


@pytest.mark.parametrize("runtime", ["vllm", "sglang", "tgi"])
def test_an_embedding_model_on_a_text_generation_preset_is_a_problem(runtime):
    # GIVEN BAAI/bge-large-en-v1.5 (BertModel, pipeline_tag feature-extraction) WHEN checked against each preset
    problem = ms.preset_task_problem(runtime, BGE_LARGE["architectures"], "bert", "feature-extraction")
    # THEN it does not fit: the message names the task and the way out
    assert problem and "embeddings" in problem and "text generation" in problem and "runtime: custom" in problem


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
def test_without_a_pipeline_tag_the_runtime_table_says_bert_is_an_embedding_model(runtime):
    problem = ms.preset_task_problem(runtime, ["BertModel"], "bert", None)
    assert problem and f"{runtime} " in problem and "embed" in problem


def test_a_sentence_transformers_model_with_a_causal_lm_architecture_is_still_an_embedding_model():
    # GIVEN a gte-Qwen2-style model: Qwen2ForCausalLM, but the Hub tags it sentence-similarity
    problem = ms.preset_task_problem("vllm", ["Qwen2ForCausalLM"], "qwen2", "sentence-similarity")
    # THEN the tag wins (vLLM runs a Sentence Transformers model as a pooling model)
    assert problem and "pipeline_tag is sentence-similarity" in problem


@pytest.mark.parametrize("runtime", ["vllm", "sglang", "tgi"])
def test_a_generation_model_fits_every_preset(runtime):
    assert ms.preset_task_problem(runtime, ["Qwen2ForCausalLM"], "qwen2", "text-generation") is None
    assert ms.preset_task_problem(runtime, ["LlamaForCausalLM"], "llama", None) is None


def test_an_unknown_architecture_is_read_by_its_name_and_nothing_is_assumed_when_nothing_says():
    assert ms.model_task("tgi", ["AcmeForSequenceClassification"], "acme", None)[0] == "classify"
    assert ms.model_task("tgi", ["Acme"], "acme", "any-to-any") == (
        None, "neither the pipeline_tag nor the architecture names a task")
    assert ms.preset_task_problem("custom", ["BertModel"], "bert", "feature-extraction") is None


# --- tensor parallelism ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("config", "heads"), [
    (QWEN25_7B, (28, 4)),
    (LLAMA31_70B, (64, 8)),
    (BGE_LARGE, (16, 16)),  # no KV-head key: as many as attention heads
    ({"n_head": 25, "model_type": "gpt2"}, (25, 25)),
    ({"num_attention_heads": 71, "multi_query": True}, (71, 1)),  # Falcon-7B
    ({"num_attention_heads": 128, "num_kv_heads": 8, "multi_query": True, "new_decoder_architecture": True},
     (128, 8)),  # Falcon-40B
    ({"n_heads": 48, "attn_config": {"kv_n_heads": 8}}, (48, 8)),  # DBRX
    ({"architectures": ["LlavaForConditionalGeneration"],
      "text_config": {"num_attention_heads": 32, "num_key_value_heads": 8}}, (32, 8)),
    ({"architectures": ["X"]}, None),
])
def test_attention_heads_are_read_from_config_json_as_vllm_reads_them(config, heads):
    assert ms.attention_heads(config) == heads


def test_three_gpus_for_qwen_2_5_7b_are_refused_by_vllm_as_the_28_heads_do_not_divide():
    # GIVEN Qwen2.5-7B (28 heads, 4 KV heads) and resources.gpus: 3
    problem = ms.tensor_parallel_problem("vllm", 3, 28, 4)
    # THEN refused, citing vLLM's line, and naming the sizes that work
    assert problem and "28 attention heads" in problem and "vllm/config/model.py:" in problem
    assert "1, 2, 4" in problem


def test_vllm_and_sglang_replicate_kv_heads_and_tgi_does_not():
    # GIVEN Llama-3.1-70B (64 heads, 8 KV heads) on 16 GPUs, and a 32-head 4-KV-head model on 8
    assert ms.tensor_parallel_problem("vllm", 16, 64, 8) is None
    assert ms.tensor_parallel_problem("sglang", 16, 64, 8) is None
    assert ms.tensor_parallel_problem("vllm", 8, 32, 4) is None
    # THEN TGI refuses KV heads that do not divide by the shards, citing its flash Llama line
    problem = ms.tensor_parallel_problem("tgi", 8, 32, 4)
    assert problem and "4 key-value heads" in problem and "flash_llama_modeling.py:" in problem
    # AND KV heads that neither divide nor are divided by tp are refused by vLLM too (12 heads, 3 KV, tp 2)
    assert "key-value" in ms.tensor_parallel_problem("vllm", 2, 12, 3)


def test_no_runtime_requires_a_power_of_two():
    # GIVEN the rules THEN none asks for a power of two: 6 GPUs serve a model with 24 heads and 6 KV heads
    assert not any(rule.power_of_two for rule in ms.TENSOR_PARALLEL.values())
    assert ms.tensor_parallel_problem("vllm", 6, 24, 6) is None
    assert ms.tensor_parallel_problem("tgi", 6, 24, 6) is None
    assert ms.tensor_parallel_sizes(28, 4, "vllm", limit=8) == [1, 2, 4]


def test_a_tensor_parallel_size_below_one_is_refused():
    assert "at least 1" in ms.tensor_parallel_problem("vllm", 0, 28, 4)
