"""Where the default model bundle lives: ``$CSC_MODEL_DIR``, else the bundle shipped with the package.

The bundle is one copy in the repository (``data/electra_models/default``). A checkout or an editable
install reads it there; a wheel carries it as the data package ``corrector.electra_models`` (see
``pyproject.toml``), so a plain ``pip install .`` finds it too.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from corrector.types import CorrectorError

ENV_MODEL = "CSC_MODEL_DIR"  # one name for the library, the CLI and the service
DEPRECATED_ENV_MODEL = "CORRECTOR_MODEL"  # read when ENV_MODEL is unset; will go away
DATA_PACKAGE = "corrector.electra_models"  # data/electra_models in a wheel
DEFAULT_BUNDLE = "default"


def default_model_path() -> Path:
    """``$CSC_MODEL_DIR`` (which must then be a directory), else :func:`shipped_model_path`."""
    for var in (ENV_MODEL, DEPRECATED_ENV_MODEL):
        value = os.environ.get(var)
        if value:
            if not Path(value).is_dir():
                raise CorrectorError(f"no model bundle at ${var}={value}: not a directory")
            return Path(value)
    return shipped_model_path()


def shipped_model_path() -> Path:
    """The default bundle of this checkout, or of the installed ``corrector.electra_models`` data package."""
    in_checkout = Path(__file__).resolve().parent.parent / "data" / "electra_models" / DEFAULT_BUNDLE
    if in_checkout.is_dir():
        return in_checkout
    spec = importlib.util.find_spec(DATA_PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        if (Path(location) / DEFAULT_BUNDLE).is_dir():
            return Path(location) / DEFAULT_BUNDLE
    return in_checkout  # absent: Corrector.load names it in its error


def installed_version() -> str | None:
    """The installed package's version, or None when it is not installed (a checkout on ``PYTHONPATH``). Looked up
    only when asked for: importlib.metadata is slow to import."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("electra-csc")
    except PackageNotFoundError:
        return None


def install_hint(extra: str, checkout: bool | None = None) -> str:
    """The command that installs an extra: in a checkout an editable install; installed from a wheel, the extra's
    own requirements as the installed package's metadata lists them (the package is not on an index to ask for
    ``electra-csc[extra]``), and the wheel's name with the extra."""
    if checkout is None:
        checkout = (Path(__file__).resolve().parent.parent / "pyproject.toml").is_file()
    if checkout:
        return f"pip install -e '.[{extra}]'"
    from importlib.metadata import PackageNotFoundError, requires, version

    try:
        reqs, ver = requires("electra-csc") or [], version("electra-csc")
    except PackageNotFoundError:
        return f"install this package with its '{extra}' extra (from a checkout: pip install '.[{extra}]')"
    wanted = []
    for r in reqs:
        req, _, marker = r.partition(";")
        clauses = [c.strip() for c in marker.split(" and ")] if marker else []
        if f'extra == "{extra}"' in clauses:
            rest = " and ".join(c for c in clauses if c != f'extra == "{extra}"')
            wanted.append(f"'{req.strip()}{'; ' + rest if rest else ''}'")
    wheel = f"electra_csc-{ver}-py3-none-any.whl[{extra}]"
    return f"pip install {' '.join(wanted)} (or reinstall the wheel as '{wheel}')"


def missing_extra(error: ModuleNotFoundError, what: str, extra: str) -> str:
    """The one-line message when ``what`` failed to import because ``extra`` is not installed; re-raises ``error``
    when the missing module is this project's own (a broken install, not a missing extra)."""
    if (error.name or "").split(".")[0] in ("corrector", "service"):
        raise error
    return f"{what} needs the '{extra}' extra (no module {error.name!r}): {install_hint(extra)}"
