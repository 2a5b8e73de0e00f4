"""Deterministic ids: the same input gives the same id in every process and engine."""

from __future__ import annotations

import json
import uuid

_ID_NAMESPACE = uuid.UUID("5f1d3c8e-2b6a-4e0f-9a57-6c1b2d3e4f50")


def vector_id(namespace: tuple[str, ...], key: str, path: str) -> str:
    """Deterministic id of one embedded text: re-adding it is an upsert in any vectorstore."""
    return str(uuid.uuid5(_ID_NAMESPACE, json.dumps([list(namespace), key, path])))


def fact_key(label: str, content_hash: str) -> str:
    """Deterministic key of a new fact: the same fact remembered twice gets the same key."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"fact\x00{label}\x00{content_hash}"))
