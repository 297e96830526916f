"""Publishing a verified release to the Hugging Face Hub.

The upload is one commit of the release directory to a dataset repository, tagged
``v<version>``; the hub commit is then recorded in ``hub.json`` beside the manifest
(the content SHA does not change). Offline, or when the hub refuses, it fails with
one clear message and writes nothing locally.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from corpus.errors import PublishFailed
from corpus.verify import verify_release
from schemas.models import HubRecord

__all__ = ["publish_release"]


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _remove_dead_hub_scratch(d: Path) -> None:
    for p in d.glob(".hub.json.tmp-*"):
        pid = p.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                p.unlink(missing_ok=True)
            except PermissionError:
                pass


def publish_release(directory: str | os.PathLike, repo: str, *, token: str | None = None,
                    private: bool = False) -> dict:
    """Upload ``directory`` to the dataset repo ``repo`` (ORG/NAME), tag it, record the commit in hub.json.

    Raises:
        VerifyFailed: the directory does not match its manifest (nothing is uploaded).
        PublishFailed: offline, or the hub could not be reached or refused; hub.json is not written.
    """
    d = Path(directory)
    _remove_dead_hub_scratch(d)  # a publish killed before its rename left it; verify would call it unlisted
    manifest = verify_release(d)
    if "/" not in repo or repo.count("/") != 1:
        raise PublishFailed(f"--repo {repo!r} is not ORG/NAME")
    if _offline():
        raise PublishFailed("cannot publish: offline (HF_HUB_OFFLINE is set), the Hugging Face Hub cannot be "
                            "reached; nothing was uploaded and nothing was written")
    from huggingface_hub import HfApi

    tag = f"v{manifest['version']}"
    api = HfApi(token=token)
    try:
        api.create_repo(repo, repo_type="dataset", exist_ok=True, private=private)
        info = api.upload_folder(
            folder_path=str(d), repo_id=repo, repo_type="dataset",
            commit_message=f"TRB corpus release {manifest['version']} ({manifest['release_sha'][:12]})",
            ignore_patterns=["hub.json", ".*"],
        )
        commit = info.oid
        api.create_tag(repo, tag=tag, revision=commit, repo_type="dataset",
                       tag_message=f"release SHA {manifest['release_sha']}")
    except Exception as e:  # network, auth and hub errors all end here: one message, nothing written
        raise PublishFailed(
            f"cannot publish {d} to {repo}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}; "
            "hub.json was not written (if a commit reached the hub, re-run publish to tag and record it)"
        ) from e
    record = HubRecord(repo=repo, commit=commit, tag=tag, release_sha=manifest["release_sha"],
                       published_at=datetime.now(timezone.utc).isoformat(timespec="seconds")).model_dump()
    tmp = d / f".hub.json.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, d / "hub.json")
    return record
