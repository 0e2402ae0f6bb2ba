import sys

from corrector.model_path import missing_extra

try:
    from .cli import main
except ModuleNotFoundError as e:  # fastapi, uvicorn, pydantic, ...: the service extra is not installed
    sys.exit(f"error: {missing_extra(e, 'the service', 'service')}")

main()
