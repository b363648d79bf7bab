"""The one file-system layer (`fs`): safe opens, atomic writes, temporary files and deletion, and every source
writing its files through it."""

from __future__ import annotations

import ast
import hashlib
import os
import re

import pytest

from hyperpod_inference import nvme_agent
from hyperpod_inference.nvme_agent import checksums, errors, fs, hf_source
from hyperpod_inference.nvme_agent.config import AgentConfig
from hyperpod_inference.nvme_agent.source import open_source

from .conftest import victim_dir
from .test_protocol import FILES

TEMP_NAME = re.compile(r"\.(?P<name>.+)\.[0-9a-f]{8}\.download")


@pytest.fixture(params=["s3", "local"])
def writer(request, tmp_path):
    """The spec of FILES in a source that writes the files itself (huggingface_hub writes the Hub's)."""
    if request.param == "s3":
        s3, bucket = request.getfixturevalue("s3"), request.getfixturevalue("bucket")
        for name, data in FILES.items():
            s3.put_object(Bucket=bucket, Key="m/" + name, Body=data)
        return {"source": "s3", "bucket": bucket, "prefix": "m/", "region": "us-east-1"}
    src = tmp_path / "fsx" / "m"
    for name, data in FILES.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    return {"source": "local", "path": str(src)}


def victim_file(tmp_path):
    """A file outside the cache (another model, another namespace) that nothing may write or delete."""
    return victim_dir(tmp_path) / "keep.bin"


def test_write_atomic_replaces_a_link_at_its_path_and_never_writes_its_target(tmp_path):
    # GIVEN a link where a record is written
    victim = victim_file(tmp_path)
    record = tmp_path / "record"
    record.symlink_to(victim)

    # WHEN the record is written atomically
    fs.write_atomic(str(record), b"new\n")

    # THEN the link is replaced by a regular file with the data, the target is unchanged, and no temporary is left
    assert not record.is_symlink() and record.read_bytes() == b"new\n"
    assert victim.read_bytes() == b"other tenant's weights"
    assert sorted(os.listdir(tmp_path)) == ["record", "victim"]


def test_write_atomic_that_fails_leaves_the_old_content_and_no_temporary(tmp_path, monkeypatch):
    # GIVEN a record, and a rename that fails
    record = tmp_path / "record"
    record.write_bytes(b"old\n")

    def refuse(*_):
        raise OSError("no rename")

    monkeypatch.setattr(os, "replace", refuse)

    # WHEN the record is written THEN the error goes up, the old content stays and the temporary is gone
    with pytest.raises(OSError, match="no rename"):
        fs.write_atomic(str(record), b"new\n")
    assert record.read_bytes() == b"old\n"
    assert os.listdir(tmp_path) == ["record"]


def test_reads_take_regular_files_only_and_never_follow_a_link(tmp_path):
    # GIVEN a regular file, a link to it and a directory
    victim = victim_file(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(victim)

    # THEN the file reads (within a limit), the link does not, and only a regular file opens
    assert fs.read_regular(str(victim)) == b"other tenant's weights"
    assert fs.read_regular(str(victim), limit=5) is None
    assert fs.read_regular(str(link)) is None
    with fs.open_regular(str(victim)) as fh:
        assert fh.read() == b"other tenant's weights"
    with pytest.raises(OSError):
        fs.open_regular(str(link))
    with pytest.raises(OSError):
        fs.open_regular(str(tmp_path))
    # AND a file is verified only as itself, never through a link
    entry = {"size": victim.stat().st_size,
             "checksum": {"algo": "sha256", "value": hashlib.sha256(victim.read_bytes()).hexdigest()}}
    assert checksums.matches(str(victim), entry)
    assert not checksums.matches(str(link), entry)


@pytest.mark.parametrize("kind", ["dir", "fifo"])
def test_a_directory_or_a_fifo_is_no_regular_file_to_read_and_keeps_no_descriptor(tmp_path, kind):
    # GIVEN a directory or a FIFO (no writer) where a record is read
    path = tmp_path / "record"
    path.mkdir() if kind == "dir" else os.mkfifo(path)
    before = len(os.listdir("/proc/self/fd"))

    # WHEN it is read THEN it is not a record: nothing is raised, nothing waits, no descriptor stays open
    assert fs.read_regular(str(path)) is None
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("kind", ["a symlink", "not a directory"])
def test_real_dir_refuses_a_link_or_a_file_naming_it_and_creates_a_missing_one(tmp_path, kind):
    # GIVEN a missing directory THEN it is created
    fs.real_dir(str(tmp_path / "new"))
    assert (tmp_path / "new").is_dir()
    # GIVEN a link to a directory, or a file, where a directory must be THEN it refuses, naming it and why
    path = tmp_path / "dir"
    if kind == "a symlink":
        path.symlink_to(tmp_path / "new")
    else:
        path.write_bytes(b"")
    with pytest.raises(errors.AgentError, match=rf"{re.escape(str(path))} must be a real directory \({kind}\)"):
        fs.real_dir(str(path))


def test_delete_and_trash_unlink_a_link_and_never_its_target(tmp_path):
    # GIVEN a cache root with links to a file and to a directory outside it, and a real directory
    victim = victim_file(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    (root / "to-file").symlink_to(victim)
    (root / "to-dir").symlink_to(victim.parent, target_is_directory=True)
    (root / "model").mkdir()
    (root / "model" / "w.bin").write_bytes(b"w")

    # WHEN they are deleted and trashed
    fs.delete(str(root / "to-file"))
    fs.trash(str(root), str(root / "to-dir"))
    fs.trash(str(root), str(root / "model"))
    fs.delete(str(root / "missing"))

    # THEN the links and the directory are gone, the targets stay, and the trash is empty
    assert sorted(os.listdir(root)) == [".trash"]
    assert victim.read_bytes() == b"other tenant's weights"
    assert os.listdir(root / ".trash") == []


def test_a_temporary_file_is_new_renamed_into_place_when_whole_and_removed_when_it_fails(tmp_path):
    # GIVEN a target in a directory that does not exist yet
    target = tmp_path / "d" / "w.bin"

    # WHEN a whole file is written through the layer
    with fs.atomic_file(str(target)) as fh:
        fh.write(b"whole")
        # THEN while it is written, it has a temporary name next to the target, and the target does not exist
        (name,) = os.listdir(target.parent)
        assert TEMP_NAME.fullmatch(name)["name"] == "w.bin" and fs.is_temp_name(name)
        assert not target.exists()
    # AND it is renamed into place
    assert target.read_bytes() == b"whole" and os.listdir(target.parent) == ["w.bin"]

    # WHEN the writing fails THEN the temporary file goes and the target keeps its content
    with pytest.raises(RuntimeError, match="cut"), fs.atomic_file(str(target)) as fh:
        fh.write(b"half")
        raise RuntimeError("cut")
    assert target.read_bytes() == b"whole" and os.listdir(target.parent) == ["w.bin"]


def test_a_temporary_file_is_never_opened_through_a_link_or_over_an_existing_file(tmp_path):
    # GIVEN a link planted at a temporary name, and an existing file at another
    victim = victim_file(tmp_path)
    link = tmp_path / ".w.bin.0a1b2c3d.download"
    link.symlink_to(victim)
    existing = tmp_path / ".x.0a1b2c3d.download"
    existing.write_bytes(b"x")

    # WHEN / THEN creating either fails, and nothing is written through the link
    for path in (link, existing):
        with pytest.raises(FileExistsError):
            fs.create_temp(str(path))
    assert victim.read_bytes() == b"other tenant's weights"
    # AND a later open of the temporary file (the S3 source's direct-I/O descriptor) refuses a link
    with pytest.raises(OSError):
        fs.open_nofollow(str(link), os.O_WRONLY)


def test_remove_temps_removes_only_temporary_names_and_unlinks_a_linked_one(tmp_path):
    # GIVEN a download directory with whole files, temporary files (one of them a link) and look-alikes
    victim = victim_file(tmp_path)
    dest = tmp_path / "dest"
    (dest / "sub").mkdir(parents=True)
    for name in ("w.bin", "sub/x.download", "sub/.hidden", ".a.0a1b2c3d.download", "sub/.b.ffffffff.download"):
        (dest / name).write_bytes(b"1")
    (dest / "sub" / ".c.01234567.download").symlink_to(victim)

    # WHEN an unfinished download's leftovers are removed
    fs.remove_temps(str(dest))

    # THEN the temporary names are gone (the link unlinked, its target kept) and everything else stays
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == ["sub", "sub/.hidden", "sub/x.download",
                                                                        "w.bin"]
    assert victim.read_bytes() == b"other tenant's weights"


def test_every_source_writes_its_files_through_the_layer_under_temporary_names(writer, tmp_path, monkeypatch):
    # GIVEN a source of three files, and the layer's temporary files and renames recorded
    spec = writer
    created, committed = [], []
    create_temp, commit = fs.create_temp, fs.commit
    monkeypatch.setattr(fs, "create_temp", lambda tmp: created.append(tmp) or create_temp(tmp))

    def commit_(tmp, target):
        assert not os.path.exists(target)  # the target appears only whole, by the rename
        committed.append((tmp, target))
        commit(tmp, target)

    monkeypatch.setattr(fs, "commit", commit_)
    source = open_source(spec, AgentConfig())
    revision, entries = source.plan()
    source.describe(entries)

    # WHEN it downloads them
    dest = tmp_path / "dest"
    dest.mkdir()
    source.download(revision, entries, str(dest), lambda entry, computed=None: None)

    # THEN every file was created by the layer under a temporary name next to its target, and renamed into place
    assert sorted(created) == sorted(tmp for tmp, _ in committed)
    assert sorted(os.path.relpath(target, dest) for _, target in committed) == sorted(FILES)
    for tmp, target in committed:
        assert os.path.dirname(tmp) == os.path.dirname(target)
        assert TEMP_NAME.fullmatch(os.path.basename(tmp))["name"] == os.path.basename(target)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == sorted(FILES)


def test_a_link_planted_at_a_sources_temporary_name_fails_the_file_and_is_never_written_through(writer, tmp_path,
                                                                                                monkeypatch):
    # GIVEN a source, and a link to another tenant's file planted at the temporary name of one of its files
    spec = writer
    victim = victim_file(tmp_path)
    dest = tmp_path / "dest"
    dest.mkdir()
    planted = dest / ".config.json.0a1b2c3d.download"
    planted.symlink_to(victim)
    temp_path = fs.temp_path
    monkeypatch.setattr(fs, "temp_path", lambda target: str(planted) if target.endswith("/config.json")
                        else temp_path(target))
    source = open_source(spec, AgentConfig())
    revision, entries = source.plan()
    source.describe(entries)

    # WHEN it downloads them THEN that file fails, naming it, and the link's target is unchanged
    with pytest.raises(RuntimeError, match="1 file\\(s\\) failed, first config.json"):
        source.download(revision, entries, str(dest), lambda entry, computed=None: None)
    assert victim.read_bytes() == b"other tenant's weights"
    assert not (dest / "config.json").exists()


def test_the_hubs_bookkeeping_is_removed_through_the_layer_a_link_unlinked_not_followed(tmp_path):
    # GIVEN a download directory whose Hub bookkeeping directory is a link to another tenant's directory
    victim = victim_file(tmp_path)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / hf_source.HF_METADATA_DIR).symlink_to(victim.parent, target_is_directory=True)

    # WHEN the Hub source cleans the directory
    hf_source.HubSource({"source": "huggingface"}, AgentConfig()).clean(str(dest))

    # THEN the link is gone (huggingface_hub would write through it) and the target is untouched
    assert os.listdir(dest) == []
    assert victim.read_bytes() == b"other tenant's weights"


def test_sources_have_no_file_system_code_of_their_own():
    # GIVEN the modules of the sources
    here = os.path.dirname(nvme_agent.__file__)
    own = {"os.open", "os.replace", "os.rename", "os.unlink", "shutil.rmtree", "uuid.uuid4"}
    for name in ("source.py", "s3_source.py", "s3_checksum.py", "s3_fetch.py", "local_source.py", "hf_source.py",
                 "checksums.py"):
        with open(os.path.join(here, name), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        # THEN none opens, renames or deletes a file or makes a temporary name itself: the layer does
        calls = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        assert not calls & own, (name, sorted(calls & own))
