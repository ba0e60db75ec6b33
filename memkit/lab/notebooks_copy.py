"""Copy the teaching notebooks out of the installed package (``memkit notebooks DIR``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import InvalidArgument
from ..validate import out_dir


def copy_notebooks(target: str | Path, force: bool = False) -> list[Path]:
    """Write every ``NN_*.ipynb`` and its ``.py`` pair into ``target``; existing files are kept unless ``force``."""
    folder = out_dir(target)
    sources = sorted(f for f in resources.files("memkit.notebooks").iterdir()
                     if f.name[:2].isdigit() and f.name.endswith((".ipynb", ".py")))
    clash = [f.name for f in sources if (folder / f.name).exists()]
    if clash and not force:
        raise InvalidArgument(f"{folder} already has {', '.join(clash[:3])}{' ...' if len(clash) > 3 else ''}; "
                              "pass --force to overwrite, or choose another folder")
    written = []
    for f in sources:
        (folder / f.name).write_bytes(f.read_bytes())
        written.append(folder / f.name)
    return written


def trust(paths: list[Path], data_dir: str | Path | None = None) -> Path | None:
    """Sign the notebooks (what ``jupyter trust`` does), so JupyterLab renders their stored outputs, widgets
    included, before anything runs; an untrusted notebook shows widgets as plain text.

    The signatures go into the Jupyter data folder ``data_dir`` (default: this user's, from ``HOME`` and
    ``JUPYTER_DATA_DIR``): a JupyterLab started with another one does not see them. Returns the signature
    database written, or None without Jupyter installed."""
    try:
        import nbformat
        from nbformat.sign import NotebookNotary
    except ImportError:  # without Jupyter there is nothing to trust them for
        return None
    notary = NotebookNotary(**({"data_dir": str(data_dir)} if data_dir is not None else {}))
    for path in paths:
        if path.suffix == ".ipynb":
            notary.sign(nbformat.read(path, as_version=4))
    return Path(notary.db_file)
