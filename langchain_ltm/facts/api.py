"""The per-user fact API as methods: one-liners over the generators of reads and writes.

``LongTermMemoryStore`` mixes this in; a class using it provides ``_facts``, the
:class:`~langchain_ltm.facts.context.FactContext` the logic runs against.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, overload

from langchain_ltm._labels import decode_label, encode_label
from langchain_ltm._steps import run_async, run_sync
from langchain_ltm.errors import InvalidUserIdError
from langchain_ltm.facts import imports, reads, updates, writes
from langchain_ltm.facts.context import FactContext, is_user_namespace
from langchain_ltm.facts.import_records import ImportMode
from langchain_ltm.facts.imports import ImportResult
from langchain_ltm.facts.model import Fact, FactVersion, RecalledFact, RememberResult

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11

__all__ = ["FactAPI"]


class FactAPI(ABC):
    """Remember, recall, update, forget, list, export and import one user's facts.

    Every method has an async twin (``a`` + name); both run the same logic.
    """

    namespace: tuple[str, ...]
    """The prefix of every user's namespace (``("memories",)`` by default)."""

    @property
    @abstractmethod
    def _facts(self) -> FactContext:
        """What the fact logic runs against."""

    @abstractmethod
    def close(self) -> None:
        """Release the engine's connections and file locks."""

    @abstractmethod
    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def user_namespace(self, user_id: str) -> tuple[str, ...]:
        """The BaseStore namespace holding ``user_id``'s facts."""
        return (*self.namespace, encode_label(user_id))

    def user_id_of(self, namespace: tuple[str, ...]) -> str | None:
        """Invert :meth:`user_namespace` (``None`` for namespaces outside the facts API).

        A label :meth:`user_namespace` never makes is no user's: ``("memories", "50%")``,
        written by a client that filled a template with a raw id (``"50%"``'s facts are
        under ``"50%25"``), or an empty label.
        """
        if not is_user_namespace(self.namespace, namespace):
            return None
        label = namespace[-1]
        user_id = decode_label(label)
        try:
            return user_id if encode_label(user_id) == label else None
        except InvalidUserIdError:
            return None

    @overload
    def remember(
        self,
        user_id: str,
        facts: str,
        *,
        pinned: bool = ...,
        ttl: float | None = ...,
        metadata: Mapping[str, Any] | None = ...,
        observed_at: datetime | None = ...,
    ) -> RememberResult: ...
    @overload
    def remember(
        self,
        user_id: str,
        facts: list[str] | tuple[str, ...],
        *,
        pinned: bool = ...,
        ttl: float | None = ...,
        metadata: Mapping[str, Any] | None = ...,
        observed_at: datetime | None = ...,
    ) -> list[RememberResult]: ...
    def remember(
        self,
        user_id: str,
        facts: str | Sequence[str],
        *,
        pinned: bool = False,
        ttl: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        observed_at: datetime | None = None,
    ) -> RememberResult | list[RememberResult]:
        """Store one fact or a batch (one embedding call), deduplicated per user.

        Each fact is decided in order: ``duplicate`` (its normalized text is stored),
        ``updated`` (a new version of a fact about the same subject; the old text is kept
        in its history), ``created`` (a new fact; ``similar`` lists close facts that were
        not merged because that was uncertain) or ``rejected`` (looks like a secret).

        Args:
            user_id: Whose fact it is (any non-empty string, e.g. an email address).
            facts: One fact, or a list of facts decided in order.
            pinned: Pin the facts: ``MemoryMiddleware`` shows pinned facts (a profile: name,
                language, preferences) to the model on every call. A pinned fact stays
                pinned across versions.
            ttl: Minutes the facts live (``None``: for good), for facts that should not
                outlive a situation ("reported a lost card this morning"). The fact and
                its versions expire together; a text with a TTL only merges into a fact
                that has one (then the call's TTL counts from that write), and a lasting
                text only into a lasting fact. A duplicate said without a TTL makes a fact
                that was to expire last; one said with a TTL leaves a lasting fact so.
                ``ttl_config`` has no say here: ``default_ttl`` is for ``put``. The TTL
                counts from the write, never from ``observed_at``.
            metadata: JSON fields stored with the facts (where they came from: a source,
                a session, a speaker), returned in ``Fact.metadata`` and searchable with
                ``recall(..., filter=)``. Each version keeps the metadata it was said with:
                a new version stores only these keys (nothing is inherited from the text
                it replaces). Keys of the fact layout (``content``, ``valid_from``, ``pinned``, ...)
                and values that are not JSON raise ``InvalidFactError``. A duplicate writes
                nothing, so its metadata is unchanged. The secret guard reads each string
                or integer value with its key (``{"password": "hunter22"}`` as
                ``password: hunter22``): a fact whose metadata holds a secret is
                ``rejected`` as one whose text does.
            observed_at: When the facts were said (timezone-aware, not in the future), for
                a backfill of old conversations: it becomes their ``valid_from`` (and a new
                fact's ``created_at``), and the version a fact replaces ends there, so
                ``history`` and ``recall(as_of=)`` follow what was said when. A fact said
                before its stored current text (an out-of-order backfill) becomes an
                earlier version and the current text stays current, if the current text
                carries it or it is an older value (otherwise a fact of its own); a text
                the fact already had at that moment (current or earlier) is a
                ``duplicate``.
                Default: now (or just after the current text, if another writer's clock
                ran ahead), so the text becomes current.

        Returns:
            A ``RememberResult`` per fact.

        Example:
            >>> from datetime import datetime, timezone
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> from langchain_ltm import LongTermMemoryStore
            >>> emb = DeterministicFakeEmbedding(size=16)
            >>> store = LongTermMemoryStore(InMemoryVectorStore(emb))
            >>> said = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
            >>> r = store.remember("u1", "Went to a support group", metadata={"session": 1},
            ...                    observed_at=said)
            >>> r.fact.valid_from.date().isoformat(), dict(r.fact.metadata)
            ('2023-05-08', {'session': 1})
        """
        return run_sync(
            writes.remember(
                self._facts,
                user_id,
                facts,
                pinned=pinned,
                ttl=ttl,
                metadata=metadata,
                observed_at=observed_at,
            )
        )

    @overload
    async def aremember(
        self,
        user_id: str,
        facts: str,
        *,
        pinned: bool = ...,
        ttl: float | None = ...,
        metadata: Mapping[str, Any] | None = ...,
        observed_at: datetime | None = ...,
    ) -> RememberResult: ...
    @overload
    async def aremember(
        self,
        user_id: str,
        facts: list[str] | tuple[str, ...],
        *,
        pinned: bool = ...,
        ttl: float | None = ...,
        metadata: Mapping[str, Any] | None = ...,
        observed_at: datetime | None = ...,
    ) -> list[RememberResult]: ...
    async def aremember(
        self,
        user_id: str,
        facts: str | Sequence[str],
        *,
        pinned: bool = False,
        ttl: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        observed_at: datetime | None = None,
    ) -> RememberResult | list[RememberResult]:
        """Async twin of :meth:`remember`."""
        return await run_async(
            writes.remember(
                self._facts,
                user_id,
                facts,
                pinned=pinned,
                ttl=ttl,
                metadata=metadata,
                observed_at=observed_at,
            )
        )

    def pinned(self, user_id: str, *, refresh_ttl: bool | None = None) -> list[Fact]:
        """The user's pinned facts, oldest first (nothing is embedded).

        A read: the facts returned that have a TTL are refreshed, as by :meth:`recall`.
        """
        return run_sync(reads.pinned(self._facts, user_id, refresh_ttl))

    async def apinned(self, user_id: str, *, refresh_ttl: bool | None = None) -> list[Fact]:
        """Async twin of :meth:`pinned`."""
        return await run_async(reads.pinned(self._facts, user_id, refresh_ttl))

    def update_fact(self, user_id: str, fact_id: str, fact: str) -> RememberResult:
        """Give one of the user's facts a new text (a new version; the old one is kept).

        A fact remembered with a TTL keeps it, counted again from this update.

        Returns ``updated``, ``duplicate`` (nothing written: the text is already this
        fact's, or another fact's that cannot be merged, with a ``reason``) or ``rejected``
        (a secret). A text another fact already holds merges that fact in when it has no
        earlier versions: ``updated`` with ``merged`` set to its id (it is deleted in the
        same write), so no text is lost when the caller then forgets it.

        Raises:
            FactNotFoundError: The user has no fact with this id.
        """
        return run_sync(updates.update(self._facts, user_id, fact_id, fact))

    async def aupdate_fact(self, user_id: str, fact_id: str, fact: str) -> RememberResult:
        """Async twin of :meth:`update_fact`."""
        return await run_async(updates.update(self._facts, user_id, fact_id, fact))

    def recall(
        self,
        user_id: str,
        queries: str | Sequence[str],
        limit: int = 5,
        *,
        min_score: float | None = None,
        include_history: bool = False,
        as_of: datetime | None = None,
        filter: Mapping[str, Any] | None = None,
        refresh_ttl: bool | None = None,
    ) -> list[RecalledFact]:
        """The user's facts most similar to any of the phrasings, each once, best first.

        Args:
            user_id: Whose facts to search; nobody else's are looked at.
            queries: One phrasing or several (a str, or a list or tuple of str; embedded in
                one call, merged by best score).
            limit: How many facts to return, from 1 to 1,000 (``ValueError`` outside it;
                ``store.search`` has no such cap).
            min_score: Leave out facts scoring below this cosine similarity.
            include_history: Also search earlier versions; a fact found through one is
                returned with that text and ``superseded=True``.
            as_of: Answer with the texts that were current at this (timezone-aware) moment.
            filter: Only facts whose metadata match, with BaseStore's filter operators
                (``{"source": "chat", "session": {"$gte": 3}}``; ``$eq $ne $gt $gte $lt
                $lte``). The engine applies it inside the user's scope before ranking, so
                ``limit`` facts come back whenever that many match. Earlier versions
                (``include_history``, ``as_of``) are matched on their own metadata. A bad
                filter, or one on a key of the fact layout, raises ``InvalidFilterError``.
            refresh_ttl: Push the expiry of the facts returned that have a TTL (and of
                their versions) as ``store.get`` of them does; ``None``: the store's
                ``refresh_on_read`` (``TTLConfig``, default ``True``).
                An agent recalling a fact every turn keeps it while it is in use.
        """
        return run_sync(
            reads.recall(
                self._facts,
                user_id,
                queries,
                limit,
                min_score,
                include_history,
                as_of,
                filter,
                refresh_ttl,
            )
        )

    async def arecall(
        self,
        user_id: str,
        queries: str | Sequence[str],
        limit: int = 5,
        *,
        min_score: float | None = None,
        include_history: bool = False,
        as_of: datetime | None = None,
        filter: Mapping[str, Any] | None = None,
        refresh_ttl: bool | None = None,
    ) -> list[RecalledFact]:
        """Async twin of :meth:`recall`."""
        return await run_async(
            reads.recall(
                self._facts,
                user_id,
                queries,
                limit,
                min_score,
                include_history,
                as_of,
                filter,
                refresh_ttl,
            )
        )

    def history(
        self, user_id: str, fact_id: str, *, refresh_ttl: bool | None = None
    ) -> list[FactVersion]:
        """Every version of one fact, oldest first, the current one last (``[]``: no such fact).

        A read: a fact with a TTL is refreshed with its versions, as by :meth:`recall`.
        """
        return run_sync(reads.history(self._facts, user_id, fact_id, refresh_ttl))

    async def ahistory(
        self, user_id: str, fact_id: str, *, refresh_ttl: bool | None = None
    ) -> list[FactVersion]:
        """Async twin of :meth:`history`."""
        return await run_async(reads.history(self._facts, user_id, fact_id, refresh_ttl))

    def forget(self, user_id: str, fact_id: str) -> bool:
        """Delete one of the user's facts and its versions; ``False`` if it has no such fact."""
        return run_sync(reads.forget(self._facts, user_id, fact_id))

    async def aforget(self, user_id: str, fact_id: str) -> bool:
        """Async twin of :meth:`forget`."""
        return await run_async(reads.forget(self._facts, user_id, fact_id))

    def prune_history(self, user_id: str, fact_id: str | None = None, *, keep: int = 0) -> int:
        """Delete earlier versions, keeping the ``keep`` newest of each fact; returns how many.

        The only call that drops versions (besides ``forget`` and ``clear_user``).
        """
        return run_sync(updates.prune_history(self._facts, user_id, fact_id, keep))

    async def aprune_history(
        self, user_id: str, fact_id: str | None = None, *, keep: int = 0
    ) -> int:
        """Async twin of :meth:`prune_history`."""
        return await run_async(updates.prune_history(self._facts, user_id, fact_id, keep))

    def upgrade_legacy_facts(self) -> int:
        """Write every user's facts from 0.1 in the current layout; returns how many.

        0.1 kept a fact's earlier texts inline in its value. Reads show them (``history``,
        exports), and any write of such a fact writes them out as its versions, but until
        then ``recall(include_history=True)`` and ``as_of`` cannot find them (they are not
        embedded items). This writes them out now, with the dates they read, one user at
        a time under that user's lock. Run it once after upgrading from 0.1; running it
        again writes nothing.

        Example:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> from langchain_ltm import LongTermMemoryStore
            >>> emb = DeterministicFakeEmbedding(size=16)
            >>> store = LongTermMemoryStore(InMemoryVectorStore(emb))
            >>> old = {"content": "Lives in Rome", "history": ["Lives in Paris"]}  # 0.1's
            >>> store.put(store.user_namespace("u1"), "f1", old)
            >>> store.upgrade_legacy_facts(), store.upgrade_legacy_facts()
            (1, 0)
            >>> [v.content for v in store.history("u1", "f1")]
            ['Lives in Paris', 'Lives in Rome']
        """
        return run_sync(updates.upgrade_legacy(self._facts))

    async def aupgrade_legacy_facts(self) -> int:
        """Async twin of :meth:`upgrade_legacy_facts`."""
        return await run_async(updates.upgrade_legacy(self._facts))

    def list_all(self, user_id: str, *, refresh_ttl: bool | None = None) -> list[Fact]:
        """All of the user's facts with their histories, oldest first.

        A read: the facts that have a TTL are refreshed, as by :meth:`recall`; an
        inventory that should leave expiries alone passes ``refresh_ttl=False`` (as
        :meth:`export_user` and the ``ltm`` command do).
        """
        return run_sync(reads.list_all(self._facts, user_id, refresh_ttl))

    async def alist_all(self, user_id: str, *, refresh_ttl: bool | None = None) -> list[Fact]:
        """Async twin of :meth:`list_all`."""
        return await run_async(reads.list_all(self._facts, user_id, refresh_ttl))

    def clear_user(self, user_id: str) -> int:
        """Delete every item in the user's namespace; returns how many items.

        Facts, their versions and anything else stored in that namespace itself. Namespaces
        below it are left alone: another configuration may keep other users' facts there
        (``namespace=("memories", "acme")`` puts Bob's under ``("memories", "acme",
        "bob")``, below user ``acme``'s).
        """
        return run_sync(reads.clear_user(self._facts, user_id))

    async def aclear_user(self, user_id: str) -> int:
        """Async twin of :meth:`clear_user`."""
        return await run_async(reads.clear_user(self._facts, user_id))

    def export_user(self, user_id: str) -> list[dict[str, Any]]:
        """Every fact of the user with every field and version, JSON-ready (lossless).

        Not a read that refreshes TTLs: a backup leaves the expiries it copies as they are.
        """
        return [fact.to_dict() for fact in self.list_all(user_id, refresh_ttl=False)]

    async def aexport_user(self, user_id: str) -> list[dict[str, Any]]:
        """Async twin of :meth:`export_user`."""
        return [fact.to_dict() for fact in await self.alist_all(user_id, refresh_ttl=False)]

    def import_user(
        self,
        user_id: str,
        records: Sequence[Mapping[str, Any] | str],
        mode: ImportMode = "restore",
        *,
        dry_run: bool = False,
    ) -> ImportResult:
        """Load facts exported by :meth:`export_user` (or plain texts) for ``user_id``.

        Args:
            user_id: Whose facts they become.
            records: Exported dicts (``id``, ``content``, ``history``, timestamps, ...) or
                plain strings.
            mode: ``"restore"`` writes them back exactly (same ids, timestamps, versions;
                importing twice changes nothing); ``"merge"`` re-decides every text,
                oldest version first, through :meth:`remember`.
            dry_run: Decide and report, write nothing.

        Raises:
            InvalidFactError: A record is malformed (nothing is written; the message names
                the record).
        """
        return run_sync(imports.import_user(self._facts, user_id, records, mode, dry_run))

    async def aimport_user(
        self,
        user_id: str,
        records: Sequence[Mapping[str, Any] | str],
        mode: ImportMode = "restore",
        *,
        dry_run: bool = False,
    ) -> ImportResult:
        """Async twin of :meth:`import_user`."""
        return await run_async(imports.import_user(self._facts, user_id, records, mode, dry_run))
