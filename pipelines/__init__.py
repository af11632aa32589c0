"""Pipelines that ship with lowerkit, importable as ``lowerkit.pipelines.<name>``.

Each file builds one `lowerkit.Pipeline` and runs as a script on a model factory, so users
can copy one and change it.
"""
