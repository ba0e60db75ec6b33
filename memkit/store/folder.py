"""The folder of an on-disk store (``FactStore.persistent``): checked as a folder, created, and locked for this
process while a store of it is open, so another process gets ``StoreLocked`` (Chroma's embedded store is not
safe across processes)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import StoreLocked, StorePathError

_FOLDER_LOCKS: dict[str, list[int]] = {}  # folder -> [the locked file's descriptor, this process's open stores]


def _lock(folder: Path) -> str | None:
    """Hold a lock on ``folder`` while a store of this process has it open (``unlock_folder``); another
    process holding it: ``StoreLocked``. Returns the key to unlock with (None: no lock on this platform)."""
    key = str(folder.resolve())
    if key in _FOLDER_LOCKS:
        _FOLDER_LOCKS[key][1] += 1  # this process already holds it (POSIX record locks belong to the process)
        return key
    try:
        import fcntl
    except ImportError:  # Windows: no advisory lock; Chroma's own file locks remain
        return None
    fd = os.open(folder / ".memkit.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise StoreLocked(
            f"{folder} is open in another process. Chroma's embedded store is not safe across processes: run "
            f"`memkit serve {folder}` (Chroma's server with a bounded index cache) and open it from every process "
            f"with FactStore.http(host, port, records=<shared sqlite file>)") from None
    _FOLDER_LOCKS[key] = [fd, 1]
    return key


def unlock_folder(key: str | None) -> None:
    """One store of this process closed ``key``'s folder: the last one releases the lock (closing the file)."""
    held = _FOLDER_LOCKS.get(key) if key is not None else None
    if held is None:
        return
    held[1] -= 1
    if held[1] == 0:
        del _FOLDER_LOCKS[key]
        os.close(held[0])


def lock_folder(folder: Path) -> str | None:
    """``folder`` checked (a folder, or a path where one can be made), created, and locked for this process;
    returns the key ``unlock_folder`` takes. ``StorePathError`` says truly why a path cannot be a store folder."""
    try:
        os.stat(folder)  # a symlink loop, a name too long: said as the system says it
    except (FileNotFoundError, NotADirectoryError):  # new, or under a file: said below
        pass
    except OSError as e:
        raise StorePathError(f"cannot use {folder} as a store folder: {e.strerror or e}") from None
    if folder.exists() and not folder.is_dir():
        raise StorePathError(f"{folder} is a file; FactStore.persistent needs a folder (it is created if missing)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return _lock(folder)
    except PermissionError as e:
        raise StorePathError(f"cannot write to {folder} ({e.strerror}); choose a folder you can write to") from None
    except (NotADirectoryError, FileExistsError):
        parent = next((p for p in folder.parents if p.exists() and not p.is_dir()), folder.parent)
        raise StorePathError(f"{folder} lies under {parent}, which is a file; FactStore.persistent needs a "
                             f"folder path") from None
    except OSError as e:  # /proc, a read-only file system, a full disk
        raise StorePathError(f"cannot create the store folder {folder}: {e.strerror or e}") from None
