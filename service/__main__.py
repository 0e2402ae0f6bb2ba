import sys

from corrector.model_path import install_hint

try:
    from .cli import main
except ModuleNotFoundError as e:  # fastapi, uvicorn, pydantic, ...: the service extra is not installed
    if (e.name or "").split(".")[0] in ("corrector", "service"):
        raise
    sys.exit(f"error: the service needs the 'service' extra (no module {e.name!r}): {install_hint('service')}")

main()
