"""Model bundles shipped inside the wheel, importable as ``corrector.electra_models`` (see pyproject.toml).

Only ``default/`` is packaged; ``corrector.model_path`` locates it. Nothing here runs any code.
"""
