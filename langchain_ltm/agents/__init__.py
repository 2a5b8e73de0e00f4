"""The agent side: memory tools, middleware and session memory, user taken from the run.

``from langchain_ltm import create_memory_tools, MemoryMiddleware, ...`` is the usual way in;
this package holds one module per piece: :mod:`.config` (options), :mod:`.tools` (the
memory tools and how the user is resolved), :mod:`.middleware` (``MemoryMiddleware``:
automatic recall and extraction), :mod:`.session` (``SessionMemoryMiddleware``),
:mod:`.hooks` (recall as a ``pre_model_hook``), :mod:`.erase` (erase and export a user
everywhere). Import them from here or from ``langchain_ltm``; the heavy ones load lazily.
"""

from langchain_ltm.agents.config import LongTermMemoryConfig

__all__ = ["LongTermMemoryConfig"]
