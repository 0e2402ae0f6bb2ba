"""HTTP service over ``corrector.Corrector``: ``python -m service`` or ``service.app.create_app()``."""
