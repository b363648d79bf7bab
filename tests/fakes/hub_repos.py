"""Repositories shaped like real ones on the Hub, for :class:`tests.fakes.hub.FakeHub`: the files, config.json
fields, gating, pipeline tags and safetensors layouts (shard count, tensor shapes, dtypes) of the models named, so
parameter counts come out as the Hub states them (Qwen2.5-7B-Instruct 7,615,616,512; Llama-3.1-8B 8,030,261,248;
Llama-3.1-70B 70,553,706,496; bge-large-en-v1.5 335,141,888). Weights are virtual: headers only.

- ``Qwen/Qwen2.5-7B-Instruct``: public, text-generation, Qwen2ForCausalLM, 4 BF16 shards with an index;
- ``meta-llama/Llama-3.1-8B-Instruct``: gated "manual" (readable with :data:`GRANTED`), 4 shards;
- ``meta-llama/Llama-3.1-70B-Instruct``: gated "manual", 30 shards;
- ``BAAI/bge-large-en-v1.5``: BertModel, feature-extraction, sentence-transformers, one F32 model.safetensors;
- ``acme/quantum-lm-7b``: an architecture (AcmeQuantumForCausalLM, model type acme_quantum) no runtime serves;
- ``acme/private-model``: private (visible with :data:`GRANTED` only);
- ``acme/pytorch-only``: weights in pytorch_model.bin, no safetensors.
Each has an older commit (:func:`older_commit`); :data:`MISSING_COMMIT` is in none of them.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from .hub import Decoder, FakeHub, Repo, Tensor, VirtualFile, shard_files

QWEN_7B = "Qwen/Qwen2.5-7B-Instruct"
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"
BGE_LARGE = "BAAI/bge-large-en-v1.5"
UNSERVED = "acme/quantum-lm-7b"
PRIVATE = "acme/private-model"
PYTORCH_ONLY = "acme/pytorch-only"

GRANTED = "hf_GrantedTokenForTests000000000000"  # a token granted the gated and private repositories
NOT_GRANTED = "hf_ValidTokenWithoutAccess000000000"  # a valid token nobody granted anything
MISSING_COMMIT = "f" * 40


def commit(repo_id: str, n: int = 0) -> str:
    """The head commit (n=0) or an older one of a repository: 40 hex digits, stable across runs."""
    return hashlib.sha1(f"{repo_id}@{n}".encode()).hexdigest()


def older_commit(repo_id: str) -> str:
    return commit(repo_id, 1)


def _json(data: dict) -> bytes:
    return json.dumps(data, indent=2).encode()


_TOKENIZER = {"tokenizer.json": b'{"version": "1.0", "model": {"type": "BPE"}}',
              "tokenizer_config.json": b'{"model_max_length": 131072}'}

QWEN_DECODER = Decoder(hidden=3584, intermediate=18944, layers=28, vocab=152064, heads=28, kv_heads=4, qkv_bias=True,
                       extra={"max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
                              "sliding_window": 131072, "use_sliding_window": False, "tie_word_embeddings": False,
                              "hidden_act": "silu", "bos_token_id": 151643, "eos_token_id": 151645})
LLAMA_8B_DECODER = Decoder(hidden=4096, intermediate=14336, layers=32, vocab=128256, heads=32, kv_heads=8,
                           extra={"max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-05,
                                  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                   "original_max_position_embeddings": 8192,
                                                   "rope_type": "llama3"},
                                  "attention_bias": False, "mlp_bias": False, "hidden_act": "silu",
                                  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]})
LLAMA_70B_DECODER = Decoder(hidden=8192, intermediate=28672, layers=80, vocab=128256, heads=64, kv_heads=8,
                            extra=LLAMA_8B_DECODER.extra)


def _decoder_repo(repo_id: str, decoder: Decoder, architecture: str, model_type: str, shards: int, **kw) -> Repo:
    files = {"config.json": _json(decoder.config(architecture, model_type)),
             "generation_config.json": b'{"do_sample": true}', "README.md": b"---\nlicense: other\n---\n",
             **_TOKENIZER, **shard_files(decoder.tensors(), shards)}
    return Repo(repo_id, commit(repo_id), files, older_commits=(older_commit(repo_id),), library_name="transformers",
                **kw)


def qwen_7b() -> Repo:
    return _decoder_repo(QWEN_7B, QWEN_DECODER, "Qwen2ForCausalLM", "qwen2", 4, pipeline_tag="text-generation",
                         tags=("transformers", "safetensors", "qwen2", "text-generation", "conversational"))


def llama_8b() -> Repo:
    return _decoder_repo(LLAMA_8B, LLAMA_8B_DECODER, "LlamaForCausalLM", "llama", 4, gated="manual",
                         granted={GRANTED}, pipeline_tag="text-generation",
                         tags=("transformers", "safetensors", "llama", "text-generation", "conversational"))


def llama_70b() -> Repo:
    return _decoder_repo(LLAMA_70B, LLAMA_70B_DECODER, "LlamaForCausalLM", "llama", 30, gated="manual",
                         granted={GRANTED}, pipeline_tag="text-generation",
                         tags=("transformers", "safetensors", "llama", "text-generation", "conversational"))


def bert_tensors(hidden: int = 1024, intermediate: int = 4096, layers: int = 24, vocab: int = 30522,
                 positions: int = 512) -> list[Tensor]:
    h, d = hidden, "F32"
    out = [Tensor("embeddings.word_embeddings.weight", d, (vocab, h)),
           Tensor("embeddings.position_embeddings.weight", d, (positions, h)),
           Tensor("embeddings.token_type_embeddings.weight", d, (2, h)),
           Tensor("embeddings.LayerNorm.weight", d, (h,)), Tensor("embeddings.LayerNorm.bias", d, (h,))]
    for i in range(layers):
        p = f"encoder.layer.{i}"
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            out += [Tensor(f"{p}.{name}.weight", d, (h, h)), Tensor(f"{p}.{name}.bias", d, (h,))]
        out += [Tensor(f"{p}.attention.output.LayerNorm.weight", d, (h,)),
                Tensor(f"{p}.attention.output.LayerNorm.bias", d, (h,)),
                Tensor(f"{p}.intermediate.dense.weight", d, (intermediate, h)),
                Tensor(f"{p}.intermediate.dense.bias", d, (intermediate,)),
                Tensor(f"{p}.output.dense.weight", d, (h, intermediate)), Tensor(f"{p}.output.dense.bias", d, (h,)),
                Tensor(f"{p}.output.LayerNorm.weight", d, (h,)), Tensor(f"{p}.output.LayerNorm.bias", d, (h,))]
    out += [Tensor("pooler.dense.weight", d, (h, h)), Tensor("pooler.dense.bias", d, (h,))]
    return out


def bge_large() -> Repo:
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": 1024, "intermediate_size": 4096,
              "num_hidden_layers": 24, "num_attention_heads": 16, "vocab_size": 30522,
              "max_position_embeddings": 512, "type_vocab_size": 2, "torch_dtype": "float32"}
    files = {"config.json": _json(config), "modules.json": b'[{"idx": 0, "name": "0", "type": "Transformer"}]',
             "sentence_bert_config.json": b'{"max_seq_length": 512, "do_lower_case": true}',
             "1_Pooling/config.json": b'{"word_embedding_dimension": 1024, "pooling_mode_cls_token": true}',
             "README.md": b"---\nlicense: mit\n---\n", **_TOKENIZER, **shard_files(bert_tensors(), 1)}
    return Repo(BGE_LARGE, commit(BGE_LARGE), files, older_commits=(older_commit(BGE_LARGE),),
                pipeline_tag="feature-extraction", library_name="sentence-transformers",
                tags=("sentence-transformers", "pytorch", "safetensors", "bert", "feature-extraction"))


def unserved() -> Repo:
    decoder = Decoder(hidden=4096, intermediate=11008, layers=32, vocab=32000, heads=32, kv_heads=32,
                      extra={"auto_map": {"AutoConfig": "configuration_acme.AcmeConfig",
                                          "AutoModelForCausalLM": "modeling_acme.AcmeQuantumForCausalLM"}})
    return _decoder_repo(UNSERVED, decoder, "AcmeQuantumForCausalLM", "acme_quantum", 2,
                         pipeline_tag="text-generation", tags=("transformers", "safetensors", "custom_code"))


def private() -> Repo:
    decoder = Decoder(hidden=2048, intermediate=5632, layers=22, vocab=32000, heads=32, kv_heads=4)
    return _decoder_repo(PRIVATE, decoder, "LlamaForCausalLM", "llama", 1, private=True, granted={GRANTED},
                         pipeline_tag="text-generation")


def pytorch_only() -> Repo:
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_head": 12, "n_layer": 12}
    return Repo(PYTORCH_ONLY, commit(PYTORCH_ONLY),
                {"config.json": _json(config), "pytorch_model.bin": VirtualFile(b"PK\x03\x04", 548_118_077)},
                older_commits=(older_commit(PYTORCH_ONLY),), pipeline_tag="text-generation",
                library_name="transformers")


def populate(hub: FakeHub) -> FakeHub:
    """Every repository above on ``hub``, which knows the tokens :data:`GRANTED` and :data:`NOT_GRANTED`."""
    hub.tokens |= {GRANTED, NOT_GRANTED}
    for build in (qwen_7b, llama_8b, llama_70b, bge_large, unserved, private, pytorch_only):
        hub.add(build())
    return hub


@pytest.fixture
def model_hub(monkeypatch, tmp_path):
    """A Hub on loopback holding every repository above (LFS files redirect to its CDN path, as the Hub's do), with
    HF_ENDPOINT pointing at it, Xet off, no HF_TOKEN and a huggingface_hub home of the test's own."""
    hub = populate(FakeHub(lfs_redirect=True))
    for name in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
                        "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HOME": str(tmp_path / "hf-home")}.items():
        monkeypatch.setenv(name, value)
    yield hub
    hub.close()
