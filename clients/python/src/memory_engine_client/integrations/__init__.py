"""Framework adapters over the typed client, each an optional extra (docs/integrations.md):

- ``openai_agents`` (``memory-engine-client[openai-agents]``): a ``Session`` over a memory's turns and
  the ``search_memory`` / ``write_memory`` tools;
- ``langgraph`` (``[langgraph]``): a ``BaseStore``;
- ``llamaindex`` (``[llamaindex]``): a ``BaseRetriever`` and a ``BaseMemoryBlock``;
- ``strands`` (``[strands]``): a ``MemoryStore`` for Strands' ``MemoryManager``;
- ``crewai`` (``[crewai]``, in an environment of its own): a ``StorageBackend`` for CrewAI's ``Memory``.

Each module imports its framework at import time: import the one you use.
"""
