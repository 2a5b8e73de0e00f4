"""Deterministic ids: the same input gives the same id in every process and engine."""

from __future__ import annotations

import json

_ID_NAMESPACE = "5f1d3c8e-2b6a-4e0f-9a57-6c1b2d3e4f50"


def _uuid5(name: str) -> str:
    import uuid  # here: commands that only read (ltm recall, list) never import uuid

    return str(uuid.uuid5(uuid.UUID(_ID_NAMESPACE), name))


def vector_id(namespace: tuple[str, ...], key: str, path: str) -> str:
    """Deterministic id of one embedded text: re-adding it is an upsert in any vectorstore."""
    return _uuid5(json.dumps([list(namespace), key, path]))


def fact_key(label: str, content_hash: str) -> str:
    """Deterministic key of a new fact: the same fact remembered twice gets the same key."""
    return _uuid5(f"fact\x00{label}\x00{content_hash}")
