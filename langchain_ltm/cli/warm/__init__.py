"""The warm encoder: ``ltm`` commands get their embeddings from a background process.

- :mod:`.protocol`: the wire format and where the socket lives (a private folder).
- :mod:`.server`: the process that keeps MiniLM loaded and exits when idle.
- :mod:`.client`: :class:`~langchain_ltm.cli.warm.client.WarmEncoder`, what the commands
  embed with: the running encoder when there is one, else this process (and it starts one).
"""
