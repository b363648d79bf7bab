"""The `local` source: a directory on the node (e.g. an FSx mount) copied into the cache."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from hyperpod_inference.nvme_agent import cache, layout, model_relative_dir, required_modules

from .conftest import run_agent


def make_tree(base):
    files = {
        "config.json": b'{"model_type": "llama"}',
        "tokenizer/tokenizer.json": os.urandom(5000),
        "model-00001.safetensors": os.urandom(3 * 1024 * 1024 + 17),
        "empty.txt": b"",
    }
    for rel, data in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def spec_of(path):
    return {"source": "local", "path": str(path)}


def local_spec(src, mount):
    return {"source": "local", "path": str(src), "mount": str(mount)}


def test_spec_layout_and_no_required_modules():
    # GIVEN/WHEN a local spec THEN it lives under local--<path-slug>/latest and needs no third-party module
    assert model_relative_dir({"source": "local", "path": "/fsx/models/llama/"}) == "local--fsx--models--llama/latest"
    assert model_relative_dir({"source": "local", "path": "/fsx//models/./llama"}) == "local--fsx--models--llama/latest"
    # AND a lossy slug gets a hash, so /fsx/models-llama and /fsx/Models/llama do not collide
    dirs = {model_relative_dir(spec_of(p)) for p in ("/fsx/models/llama", "/fsx/models-llama", "/fsx/Models/llama")}
    assert len(dirs) == 3
    assert required_modules({"source": "local", "path": "/fsx/x"}) == []


def test_cold_copy_records_sha256_and_publishes_atomically(tmp_path):
    # GIVEN a model directory tree on a (simulated) FSx mount
    src = tmp_path / "fsx" / "models" / "llama"
    files = make_tree(src)
    root = tmp_path / "nvme"

    # WHEN the agent ensures it (as a subprocess, like the init container)
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec_of(src)))

    # THEN the tree is copied byte for byte under local--<slug>/latest and marked complete, with no leftovers
    assert result.returncode == 0, result.stderr
    final = root / model_relative_dir(spec_of(src))
    assert result.stdout.strip() == str(final)
    for rel, data in files.items():
        assert (final / rel).read_bytes() == data
    assert (final / ".complete").is_file()
    assert not (final.parent / (final.name + ".partial")).exists()
    assert not [p for p in final.rglob("*.download")]
    # AND the manifest records each file's size and the sha256 computed during the copy
    manifest = json.loads((final / "manifest.json").read_text())
    assert manifest["source"] == {"source": "local", "path": str(src)}
    assert {f["path"]: (f["size"], f["checksum"]) for f in manifest["files"]} == {
        rel: (len(data), {"algo": "sha256", "value": hashlib.sha256(data).hexdigest()}) for rel, data in files.items()}
    assert cache.verify(str(root), spec_of(src)) == ("ok", [])


def test_warm_hit_does_not_read_the_source(tmp_path):
    # GIVEN a model already complete in the cache
    src = tmp_path / "fsx" / "m"
    make_tree(src)
    root = tmp_path / "nvme"
    final = cache.ensure(str(root), spec_of(src))
    before = layout.last_used(final)

    # WHEN the source file system is gone (unmounted) and ensure runs again
    os.rename(src, tmp_path / "fsx" / "moved")
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec_of(src)))

    # THEN it is a cache hit: success, same directory, LRU timestamp updated
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == final
    assert layout.last_used(final) >= before


def test_verify_detects_corrupted_cache_file_and_ensure_recopies(tmp_path):
    # GIVEN a complete local model whose weights file got corrupted on the NVMe (same size)
    src = tmp_path / "fsx" / "m"
    files = make_tree(src)
    root = tmp_path / "nvme"
    final = cache.ensure(str(root), spec_of(src))
    path = os.path.join(final, "model-00001.safetensors")
    with open(path, "r+b") as fh:
        fh.seek(1234)
        fh.write(b"\xff\x00")

    # WHEN verify runs
    result = run_agent("verify", "--cache-root", root, "--model", json.dumps(spec_of(src)))

    # THEN it reports exactly that file (exit 5) and unmarks the model
    assert result.returncode == 5, result.stderr
    assert json.loads(result.stdout) == {"state": "corrupt", "corrupt": ["model-00001.safetensors"]}
    assert not layout.is_complete(final)
    # AND the next ensure copies it again and the model verifies
    cache.ensure(str(root), spec_of(src))
    assert open(path, "rb").read() == files["model-00001.safetensors"]
    assert cache.verify(str(root), spec_of(src)) == ("ok", [])


def test_missing_source_path_exits_1_and_relative_path_exits_2(tmp_path):
    # GIVEN a spec naming a directory that does not exist (e.g. FSx not mounted yet)
    missing = tmp_path / "fsx" / "not-there"

    # WHEN the agent ensures it
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec_of(missing)))

    # THEN it exits 1 (a runtime error: warm mode retries it next cycle) naming the path, and marks nothing
    assert result.returncode == 1
    assert f"local model path {missing} does not exist" in result.stderr
    assert not list((tmp_path / "nvme").rglob(".complete"))
    # AND a relative path is a bad spec: exit 2
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", '{"source": "local", "path": "fsx/m"}')
    assert result.returncode == 2
    assert "absolute 'path'" in result.stderr


def test_leftover_partial_files_are_copied_again(tmp_path):
    # GIVEN a .partial of a killed copy holding a truncated file (local sources have no checksum to resume against)
    src = tmp_path / "fsx" / "m"
    files = make_tree(src)
    root = tmp_path / "nvme"
    partial = root / (model_relative_dir(spec_of(src)) + ".partial")
    partial.mkdir(parents=True)
    (partial / "model-00001.safetensors").write_bytes(files["model-00001.safetensors"][:100])

    # WHEN ensure runs THEN the model is complete and correct
    final = cache.ensure(str(root), spec_of(src))
    assert open(os.path.join(final, "model-00001.safetensors"), "rb").read() == files["model-00001.safetensors"]
    assert cache.verify(str(root), spec_of(src)) == ("ok", [])


@pytest.mark.parametrize("bad", ["/", 42, None])
def test_bad_local_paths_are_spec_errors(bad):
    from hyperpod_inference.nvme_agent import SpecError, normalize_spec

    with pytest.raises(SpecError):
        normalize_spec({"source": "local", "path": bad})


@pytest.mark.parametrize("root", ["//", "///", "/./", "/..", "/tmp/..", "//tmp/..", "/tmp/../", "/.//./"])
def test_every_spelling_of_the_root_directory_is_refused_as_path_and_as_mount(root):
    from hyperpod_inference.nvme_agent import SpecError, normalize_spec

    # GIVEN a local spec whose path is the root directory spelled another way
    # WHEN it is checked THEN it is a spec error naming the root directory (never a copy of the node's file system)
    with pytest.raises(SpecError, match="is the root directory"):
        normalize_spec({"source": "local", "path": root})
    # AND a mount that is the root is refused even when the path under it is a real folder
    with pytest.raises(SpecError, match="'mount' .* is the root directory"):
        normalize_spec({"source": "local", "path": "/fsx/models", "mount": root})


def test_local_paths_are_normalized_including_a_leading_double_slash():
    from hyperpod_inference.nvme_agent import normalize_spec

    # GIVEN paths with a leading //, dot segments and trailing slashes WHEN normalized THEN one spelling each
    assert normalize_spec({"source": "local", "path": "//fsx//models/./llama/", "mount": "//fsx/"}) == {
        "source": "local", "path": "/fsx/models/llama", "mount": "/fsx"}


def test_a_link_to_the_root_directory_is_refused_before_anything_is_copied(tmp_path):
    # GIVEN a model path on the "mount" that is a link to the root directory
    (tmp_path / "fsx").mkdir()
    (tmp_path / "fsx" / "models").symlink_to("/")

    # WHEN the agent ensures it (no mount given: the mount defaults to the path)
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model",
                       json.dumps(spec_of(tmp_path / "fsx" / "models")))

    # THEN it refuses, naming the root directory, and copies nothing
    assert result.returncode == 1, result.stderr
    assert "leads to the root directory" in result.stderr
    assert not (tmp_path / "nvme").exists() or not list((tmp_path / "nvme").rglob("*.partial"))


def test_a_local_link_escaping_the_mount_fails_the_plan_naming_it(tmp_path):
    # GIVEN a model directory on the node mount with a link to a secret outside the mount
    mount = tmp_path / "fsx"
    src = mount / "models" / "m"
    src.mkdir(parents=True)
    (src / "config.json").write_text("{}")
    secret = tmp_path / "etc" / "shadow"
    secret.parent.mkdir()
    secret.write_text("root:$6$secret")
    (src / "tokenizer.json").symlink_to(secret)
    root = tmp_path / "nvme"

    # WHEN the agent ensures it
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(local_spec(src, mount)))

    # THEN it fails naming the link and its target, and copied nothing
    assert result.returncode == 1
    assert f"tokenizer.json is a link to {secret}, outside the mount {mount}" in result.stderr
    assert not [p for p in root.rglob("*") if p.is_file() and ".locks" not in p.parts and p.name != layout.ROOT_MARKER]


def test_a_local_link_inside_the_mount_is_copied_as_a_regular_file(tmp_path):
    # GIVEN a model whose weights are links to blobs elsewhere on the same mount (a Hub-style snapshot), and a
    # directory link inside the mount
    mount = tmp_path / "fsx"
    blobs = mount / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "abc").write_bytes(b"weights")
    (blobs / "tok").mkdir()
    (blobs / "tok" / "vocab.txt").write_bytes(b"vocab")
    src = mount / "models" / "m"
    src.mkdir(parents=True)
    (src / "model.safetensors").symlink_to("../../blobs/abc")
    (src / "tokenizer").symlink_to(blobs / "tok", target_is_directory=True)
    root = tmp_path / "nvme"

    # WHEN the agent ensures it
    final = cache.ensure(str(root), local_spec(src, mount))

    # THEN the links' targets are copied as regular files under the links' names
    assert not os.path.islink(os.path.join(final, "model.safetensors"))
    assert open(os.path.join(final, "model.safetensors"), "rb").read() == b"weights"
    assert not os.path.islink(os.path.join(final, "tokenizer"))
    assert open(os.path.join(final, "tokenizer", "vocab.txt"), "rb").read() == b"vocab"
    assert cache.verify(str(root), local_spec(src, mount)) == ("ok", [])


def test_without_a_mount_local_links_must_stay_inside_the_model_path(tmp_path):
    # GIVEN a local spec without "mount" and a link to a file beside the model directory
    src = tmp_path / "fsx" / "m"
    src.mkdir(parents=True)
    (tmp_path / "fsx" / "beside").write_text("x")
    (src / "w.bin").symlink_to(tmp_path / "fsx" / "beside")

    # WHEN / THEN the plan fails naming the link
    with pytest.raises(RuntimeError, match="w.bin is a link to .*outside the mount"):
        cache.ensure(str(tmp_path / "nvme"), {"source": "local", "path": str(src)})
