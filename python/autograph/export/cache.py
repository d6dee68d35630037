"""The disk cache of compiled parts (AOTInductor and OpenVINO packages): the one owner of its entries.

A key names what a package was made from and by what: its kind, this cache's format, the autograph,
torch and compiler versions, the machine it runs on (the CPU's vector capability, or the GPU's compute
capability and CUDA version), the compiler's configuration, and the part's graph and weights (the
caller's content digest). A package from another machine, version or configuration is never found.

An entry is written whole or not at all: a writer writes a partial file of its own (`writing()`), which
is renamed to ``<key>.<sha256 prefix>.<suffix>`` once complete, so a reader checks the bytes it reads
against the name and drops an entry that was truncated or overwritten (a later optimize compiles it
again instead of failing on it for ever). Reads mark an entry used; after each write the least
recently used entries go until the cache fits its bound, and partial files that a crashed or killed
writer left are swept once they are an hour old.

Where it lives and how large it may grow, from the environment (read at each use):
``AUTOGRAPH_CACHE_DIR`` (default ``$XDG_CACHE_HOME/autograph/parts``, ``~/.cache`` without
XDG_CACHE_HOME) and ``AUTOGRAPH_CACHE_MAX_GB`` (default 10; a model's packages hold its weights, so a large model's are large).
"""
import contextlib
import hashlib
import json
import os
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional

import torch

from ..errors import InputError

FORMAT = 2  # the layout of entries and keys; a change leaves older entries unread (then evicted)
DEFAULT_MAX_GB = 10.0
STALE_PARTIAL_S = 3600.0
_PARTIAL = ".partial"


class Package(bytes):
    """A package's bytes with their sha256 (hex), computed once: the program's spec names it too."""
    sha256: str

    def __new__(cls, data: bytes, sha256: Optional[str] = None) -> "Package":
        package = super().__new__(cls, data)
        package.sha256 = sha256 or hashlib.sha256(data).hexdigest()
        return package


def sha256_of(data: bytes) -> str:
    """The sha256 of `data`, without hashing a Package again."""
    return data.sha256 if isinstance(data, Package) else hashlib.sha256(data).hexdigest()


def cache_dir() -> str:
    return (os.environ.get("AUTOGRAPH_CACHE_DIR") or
            os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "autograph", "parts"))


def max_bytes() -> int:
    text = os.environ.get("AUTOGRAPH_CACHE_MAX_GB")
    try:
        gb = float(text) if text else DEFAULT_MAX_GB
    except ValueError:
        gb = -1.0
    if not gb >= 0:
        raise InputError(f"AUTOGRAPH_CACHE_MAX_GB={text!r} is not a size in GB (a number >= 0, e.g. 10)")
    return int(gb * 2**30)


def machine(device: torch.device) -> str:
    """What a package compiled for `device` depends on besides the software: the CPU's vector
    capability (Inductor's C++ code uses its instructions), or the GPU's compute capability and CUDA."""
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        return f"cuda sm_{major}{minor} cuda {torch.version.cuda}"
    return f"{device.type} {torch.backends.cpu.get_cpu_capability()}"


def autograph_version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version("autograph")
    except (ImportError, PackageNotFoundError):
        return "checkout"


def key(kind: str, device: torch.device, compiler: Dict[str, Any], content: str) -> str:
    """The entry's key: `kind` (what the package is, e.g. "aoti-part"), the machine of `device`, the
    versions, `compiler` (its version and configuration, JSON-serializable) and `content` (the digest
    of the part's graph and weights)."""
    described = {"format": FORMAT, "kind": kind, "machine": machine(device), "autograph": autograph_version(),
                 "torch": torch.__version__, "compiler": compiler}
    h = hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode())
    h.update(content.encode())
    return h.hexdigest()[:32]


def _entries(folder: str, prefix: str = "") -> List[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return [e for e in it if e.name.startswith(prefix) and _PARTIAL not in e.name and e.is_file()]
    except FileNotFoundError:
        return []


def contains(entry_key: str, suffix: str) -> bool:
    """Whether an entry of `entry_key` is there (not yet checked: read() checks)."""
    return any(e.name.endswith(suffix) for e in _entries(cache_dir(), entry_key + "."))


def read(entry_key: str, suffix: str) -> Optional[Package]:
    """The newest intact entry of `entry_key`, marked used; None when there is none. A damaged entry
    (its bytes do not match its name) is removed."""
    folder = cache_dir()
    found = [e for e in _entries(folder, entry_key + ".") if e.name.endswith(suffix)]
    for entry in sorted(found, key=lambda e: e.stat().st_mtime, reverse=True):
        try:
            with open(entry.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:  # evicted, or replaced by a concurrent writer, meanwhile
            continue
        digest = hashlib.sha256(data).hexdigest()
        if entry.name != _name(entry_key, digest, suffix):
            with contextlib.suppress(OSError):
                os.remove(entry.path)
            continue
        with contextlib.suppress(OSError):
            os.utime(entry.path)
        return Package(data, digest)
    return None


def _name(entry_key: str, digest: str, suffix: str) -> str:
    return f"{entry_key}.{digest[:16]}{suffix}"


def partial_path(entry_key: str, suffix: str) -> str:
    """A new partial file's path (the folder made) for a writer of the package of `entry_key`, which
    commit() then puts in place. It ends in `suffix` as the entry does (AOTInductor's packager wants
    a .pt2 name)."""
    folder = cache_dir()
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"{entry_key}.{os.getpid()}.{uuid.uuid4().hex[:8]}{_PARTIAL}{suffix}")


@contextlib.contextmanager
def writing(entry_key: str, suffix: str) -> Iterator[str]:
    """partial_path() for the body to write the package to, removed when the body raises (a compile
    error, a full disk, an interrupt); commit() it after."""
    partial = partial_path(entry_key, suffix)
    try:
        yield partial
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(partial)
        raise


def commit(partial: str, entry_key: str, suffix: str) -> Package:
    """The package written to `partial` (from writing()), as the entry of `entry_key`: renamed into
    place whole, other entries of the key removed, the cache trimmed. Returns its bytes."""
    try:
        with open(partial, "rb") as f:
            package = Package(f.read())
        target = os.path.join(os.path.dirname(partial), _name(entry_key, package.sha256, suffix))
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(partial)
        raise
    for e in _entries(os.path.dirname(partial), entry_key + "."):
        if e.path != target and e.name.endswith(suffix):
            with contextlib.suppress(OSError):
                os.remove(e.path)
    trim()
    return package


def trim(limit: Optional[int] = None) -> List[str]:
    """Removes partial files older than STALE_PARTIAL_S and the least recently used entries beyond
    `limit` bytes (default max_bytes()). Returns the names removed."""
    folder = cache_dir()
    limit = max_bytes() if limit is None else limit
    removed, entries, now = [], [], time.time()
    try:
        with os.scandir(folder) as it:
            listed = [e for e in it if e.is_file()]
    except FileNotFoundError:
        return removed
    for e in listed:
        try:
            st = e.stat()
        except FileNotFoundError:
            continue
        if _PARTIAL in e.name:
            if now - st.st_mtime > STALE_PARTIAL_S:
                with contextlib.suppress(OSError):
                    os.remove(e.path)
                    removed.append(e.name)
        elif not e.name.endswith(".json"):  # the toolchain's answers live beside the packages
            entries.append((st.st_mtime, st.st_size, e))
    total = sum(size for _, size, _ in entries)
    for _, size, e in sorted(entries, key=lambda x: x[0]):
        if total <= limit:
            break
        with contextlib.suppress(OSError):
            os.remove(e.path)
            removed.append(e.name)
        total -= size
    return removed


__all__ = ["Package", "sha256_of", "cache_dir", "max_bytes", "machine", "key", "contains", "read", "partial_path",
           "writing",
           "commit", "trim", "FORMAT"]
