"""Stages: the unit of lowering (`stage`), its kinds (`rewrite`, `transform`, `custom_ops`),
pipelines of them (`pipeline`) with the one crossing rule (`crossing`), and what runs around
them: forked isolation, instruments, dumps, failure scans and replays."""
