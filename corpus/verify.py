"""Verifying a release directory against its manifest, from the files alone."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from corpus.errors import VerifyFailed
from schemas.models import ReleaseManifest
from schemas.release_format import CONFIGS, SPLITS, file_differences, release_sha_of_files

__all__ = ["verify_release"]


def verify_release(directory: str | os.PathLike) -> dict:
    """Recompute every file hash, the row counts and the release SHA; return the manifest if all agree.

    Raises:
        VerifyFailed: naming every difference (a changed, missing or unlisted file; a count; the SHA).
    """
    d = Path(directory)
    diffs: list[str] = []
    try:
        manifest = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        ReleaseManifest.model_validate(manifest)
    except FileNotFoundError:
        raise VerifyFailed(str(d), [f"{d}/manifest.json: missing (not a release directory)"]) from None
    except (ValueError, ValidationError) as e:
        raise VerifyFailed(str(d), [f"{d}/manifest.json: not a valid release manifest: {e}".splitlines()[0]]) from None

    listed = {f["path"]: f for f in manifest["files"]}
    diffs += file_differences(d, manifest)

    data = []
    for config in CONFIGS:
        for split in SPLITS:
            data += [(config, p) for p in sorted(d.glob(f"data/{config}/{split}-*.parquet"))]
    try:
        sha, counts = release_sha_of_files(data)
    except Exception as e:  # an unreadable parquet file is a difference, not a crash
        diffs.append(f"data files unreadable: {type(e).__name__}: {e}")
        raise VerifyFailed(str(d), diffs) from None
    expected = {c: sum(v.values()) for c, v in manifest["counts"].items()}
    for config in sorted(set(expected) | set(counts)):
        if expected.get(config, 0) != counts.get(config, 0):
            diffs.append(f"data/{config}: {counts.get(config, 0)} rows, the manifest says {expected.get(config, 0)}")
    if sha != manifest["release_sha"]:
        diffs.append(f"release SHA recomputed from the parquet rows is {sha}, the manifest says {manifest['release_sha']}")
    croissant = d / "croissant.json"
    if croissant.is_file():
        try:
            doc = json.loads(croissant.read_text(encoding="utf-8"))
            for obj in doc.get("distribution", []):
                url, want = obj.get("contentUrl"), obj.get("sha256")
                if url and want and url in listed and listed[url]["sha256"] != want:
                    diffs.append(f"croissant.json: sha256 of {url} differs from the manifest")
        except ValueError:
            diffs.append("croissant.json: not valid JSON")
    if diffs:
        raise VerifyFailed(str(d), diffs)
    return manifest
