"""The source protocol (key, plan, describe, download, clean), exercised the same way for S3, the Hub and local."""

from __future__ import annotations

import os

import pytest

from hyperpod_inference.nvme_agent import checksums, model_relative_dir
from hyperpod_inference.nvme_agent.config import AgentConfig
from hyperpod_inference.nvme_agent.source import Source, open_source

from ..fakes.hub import Repo
from .test_hf import COMMIT

FILES = {"config.json": b'{"a": 1}', "tokenizer/tokenizer.json": os.urandom(3000),
         "model.safetensors": os.urandom(300_000)}


@pytest.fixture(params=["s3", "huggingface", "local"])
def model(request, tmp_path):
    """(spec, revision the plan must resolve, bookkeeping the source leaves in a download dir) of FILES."""
    if request.param == "s3":
        s3, bucket = request.getfixturevalue("s3"), request.getfixturevalue("bucket")
        for name, data in FILES.items():
            s3.put_object(Bucket=bucket, Key="m/" + name, Body=data)
        return {"source": "s3", "bucket": bucket, "prefix": "m/", "region": "us-east-1"}, "latest"
    if request.param == "huggingface":
        hub = request.getfixturevalue("hub")
        request.getfixturevalue("hf_env")
        repo = hub.add(Repo("acme/proto", COMMIT, FILES, lfs={"model.safetensors"}))
        return {"source": "huggingface", "modelId": repo.repo_id, "revision": "main"}, COMMIT
    src = tmp_path / "fsx" / "m"
    for name, data in FILES.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    return {"source": "local", "path": str(src)}, "latest"


def test_every_source_plans_describes_downloads_and_cleans_through_one_protocol(model, tmp_path):
    # GIVEN a model of three files in the source, and its source object
    spec, revision = model
    source = open_source(spec, AgentConfig())
    assert isinstance(source, Source)
    assert source.key() == model_relative_dir(spec)

    # WHEN it plans and describes the model
    resolved, entries = source.plan()
    source.describe(entries)

    # THEN the plan has every file with its size and the revision it resolved to; every entry has a checksum
    assert resolved == revision
    assert {e["path"]: e["size"] for e in entries} == {n: len(d) for n, d in FILES.items()}
    assert all("checksum" in e for e in entries)

    # WHEN it downloads them
    dest = tmp_path / "dest"
    dest.mkdir()
    done = []
    source.download(resolved, entries, str(dest), lambda entry, computed=None: done.append((entry["path"], computed)))

    # THEN each file is in place once, byte for byte, and matches its (now known) checksum
    assert sorted(p for p, _ in done) == sorted(FILES)
    for entry in entries:
        assert (dest / entry["path"]).read_bytes() == FILES[entry["path"]]
        assert checksums.matches(str(dest / entry["path"]), entry)

    # WHEN an interrupted download left a temporary file (and, for the Hub, the client's bookkeeping)
    (dest / "tokenizer" / ".tokenizer.json.0a1b2c3d.download").write_bytes(b"half")
    for name in source.reserved:
        (dest / name).mkdir(exist_ok=True)
        (dest / name / "x.incomplete").write_bytes(b"half")
    source.clean(str(dest))

    # THEN clean removes exactly those, and the whole files stay
    left = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert left == sorted(FILES)
