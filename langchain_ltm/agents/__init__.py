"""The agent side: memory tools, middleware and session memory, user taken from the run.

``from langchain_ltm import create_memory_tools, MemoryMiddleware, ...`` is the usual way in;
this package holds one module per piece: :mod:`.config` (options), :mod:`.tools` (the
memory tools and how the user is resolved).
"""

from langchain_ltm.agents.config import LongTermMemoryConfig

__all__ = ["LongTermMemoryConfig"]
