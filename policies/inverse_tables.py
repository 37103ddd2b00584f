"""Inverse-action tables: which call undoes which, on which target (TwinCheck App. Fig. 4: "a
prespecified lexical relation, not open-ended semantic inference"; SPEC §5.1).

Two kinds of table:

- a **declared** table per environment (`policies.inverse_bfcl.BFCL_TABLE`, read off the
  bfcl-eval package's multi-turn classes and their docstrings): explicit pairs, including
  flag-valued inverses (the same tool with a flag flipped: ``lockDoors(unlock=False)`` /
  ``lockDoors(unlock=True)``), argument-less targets (``pressBrakePedal`` /
  ``releaseBrakePedal`` act on the one brake pedal), renamed target arguments
  (``follow_user(username_to_follow)`` / ``unfollow_user(username_to_unfollow)``) and targets
  created by the first call (``cancel_order(order_id)`` names the id ``place_order``
  returned);
- the generic **lexical** table for every other trace: verb swaps in tool names
  (``lock_account`` / ``unlock_account``) on the same values of shared argument names.

"Same target" is never assumed: a target argument missing on either side means the targets are
unknown, and unknown is not the same (the house rule).
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Direction = Literal["undo", "redo"]


@dataclass(frozen=True, slots=True)
class Action:
    """A tool, optionally narrowed by one argument's value (``values``; ``negate`` for "any
    value but these"). A call without that argument does not match."""

    name: str
    arg: str = ""
    values: tuple[Any, ...] = ()
    negate: bool = False

    def matches(self, name: str, args: Mapping[str, Any]) -> bool:
        if name != self.name:
            return False
        if not self.arg:
            return True
        if self.arg not in args:
            return False
        hit = any(_same_value(args[self.arg], v) for v in self.values)
        return hit != self.negate


@dataclass(frozen=True, slots=True)
class InversePair:
    """``undo`` reverses ``do`` on the same target. ``target``: (do argument, undo argument)
    pairs naming the target; ``from_result``: (key in the do call's result, undo argument) —
    the target the do call created; neither: the target is argument-less (always the same).
    ``undo_words``/``do_words``: words in a user request that ask for that direction.
    ``symmetric``: ``do`` after ``undo`` is an inverse as well (lock after unlock).
    ``breakers``: tools whose successful call in between changes what a target name refers
    to (``cd``: file names are local to the working directory)."""

    label: str
    do: Action
    undo: Action
    target: tuple[tuple[str, str], ...] = ()
    from_result: tuple[tuple[str, str], ...] = ()
    undo_words: tuple[str, ...] = ()
    do_words: tuple[str, ...] = ()
    symmetric: bool = True
    breakers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class InverseMatch:
    pair: str
    direction: Direction
    target: str  # how the target was matched, for the record
    request_words: tuple[str, ...]  # words that would have requested this call
    target_args: tuple[str, ...] = ()  # the call's arguments that name the target by value
    breakers: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "pair": self.pair,
            "direction": self.direction,
            "target": self.target,
            "request_words": list(self.request_words),
        }


class InverseTable(Protocol):
    name: str

    def may_invert(self, name: str) -> bool:
        """Cheap filter: can a call of this tool invert anything?"""
        ...

    def partners(self, name: str) -> frozenset[str]:
        """Tools whose calls a call of ``name`` may invert (a cheap filter)."""
        ...

    def relation(
        self,
        name: str,
        args: Mapping[str, Any],
        earlier_name: str,
        earlier_args: Mapping[str, Any],
        earlier_result: Any,
    ) -> InverseMatch | None:
        """How the call (name, args) inverts the earlier successful call, or None."""
        ...


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return bool(a == b)


def _same_target_value(a: Any, b: Any) -> bool:
    """Scalars equal; lists that share an element (unlocking one of the doors just locked)."""
    if isinstance(a, list) and isinstance(b, list):
        return any(_same_value(x, y) for x in a for y in b)
    return _same_value(a, b)


def _result_value(result: Any, key: str) -> Any:
    content = result
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except ValueError:
            return None
    return content.get(key) if isinstance(content, dict) else None


class DeclaredTable:
    """An environment's explicit inverse pairs."""

    def __init__(self, name: str, pairs: list[InversePair]) -> None:
        self.name = name
        self.pairs = pairs
        self._names = frozenset(p.undo.name for p in pairs) | frozenset(
            p.do.name for p in pairs if p.symmetric
        )
        partners: dict[str, set[str]] = {}
        for p in pairs:
            partners.setdefault(p.undo.name, set()).add(p.do.name)
            if p.symmetric:
                partners.setdefault(p.do.name, set()).add(p.undo.name)
        self._partners = {k: frozenset(v) for k, v in partners.items()}

    def may_invert(self, name: str) -> bool:
        return name in self._names

    def partners(self, name: str) -> frozenset[str]:
        return self._partners.get(name, frozenset())

    def relation(
        self,
        name: str,
        args: Mapping[str, Any],
        earlier_name: str,
        earlier_args: Mapping[str, Any],
        earlier_result: Any,
    ) -> InverseMatch | None:
        for p in self.pairs:
            if p.undo.matches(name, args) and p.do.matches(earlier_name, earlier_args):
                how = _target(p, p.target, earlier_args, args, earlier_result)
                if how is not None:
                    named = tuple(b for _, b in p.target)
                    return InverseMatch(p.label, "undo", how, p.undo_words, named, p.breakers)
            if (
                p.symmetric
                and not p.from_result
                and p.do.matches(name, args)
                and p.undo.matches(earlier_name, earlier_args)
            ):
                flipped = tuple((b, a) for a, b in p.target)
                how = _target(p, flipped, earlier_args, args, None)
                if how is not None:
                    named = tuple(a for a, _ in p.target)
                    return InverseMatch(p.label, "redo", how, p.do_words, named, p.breakers)
        return None


def _target(
    p: InversePair,
    target: tuple[tuple[str, str], ...],
    earlier_args: Mapping[str, Any],
    args: Mapping[str, Any],
    earlier_result: Any,
) -> str | None:
    """How the two calls name the same target, or None when they do not (or it is unknown)."""
    if target:
        for a, b in target:
            if a not in earlier_args or b not in args:
                return None
            if not _same_target_value(earlier_args[a], args[b]):
                return None
        return ", ".join(f"{a} = {b}" for a, b in target)
    if p.from_result:
        for key, b in p.from_result:
            made = _result_value(earlier_result, key)
            if made is None or b not in args or not _same_value(made, args[b]):
                return None
        return ", ".join(f"{b} = result[{key!r}]" for key, b in p.from_result)
    return "argument-less target"


# --- the lexical table -------------------------------------------------------------------

#: Verb swaps for the lexical table (TwinCheck App. Fig. 4).
INVERSE_VERBS: dict[str, str] = {}
for _a, _b in [
    ("lock", "unlock"),
    ("add", "remove"),
    ("create", "delete"),
    ("follow", "unfollow"),
    ("open", "close"),
    ("enable", "disable"),
    ("mount", "unmount"),
    ("block", "unblock"),
    ("subscribe", "unsubscribe"),
    ("archive", "unarchive"),
    ("mute", "unmute"),
    ("like", "unlike"),
    ("pin", "unpin"),
    ("star", "unstar"),
    ("attach", "detach"),
    ("install", "uninstall"),
    ("connect", "disconnect"),
    ("activate", "deactivate"),
    ("grant", "revoke"),
    ("start", "stop"),
    ("push", "pop"),
    ("mkdir", "rmdir"),
    ("insert", "delete"),
    ("hide", "show"),
    ("book", "cancel"),
    ("login", "logout"),
]:
    INVERSE_VERBS.setdefault(_a, _b)
    INVERSE_VERBS.setdefault(_b, _a)

_SPLIT = re.compile(r"([_\-.]|(?<=[a-z])(?=[A-Z]))")
_INVERSE_CACHE: dict[str, tuple[str, str] | None] = {}


def inverse_name(name: str) -> str | None:
    """``unlock_account`` ↔ ``lock_account``: swap the first token found in the table."""
    found = _inverse(name)
    return found[0] if found is not None else None


def _inverse(name: str) -> tuple[str, str] | None:
    """(inverse name, this call's verb)."""
    if name in _INVERSE_CACHE:
        return _INVERSE_CACHE[name]
    parts = _SPLIT.split(name)
    inv: tuple[str, str] | None = None
    for i, p in enumerate(parts):
        low = p.lower()
        if low in INVERSE_VERBS:
            rep = INVERSE_VERBS[low]
            rep = rep.capitalize() if p[:1].isupper() else rep
            inv = ("".join(parts[:i] + [rep] + parts[i + 1 :]), low)
            break
    _INVERSE_CACHE[name] = inv
    return inv


class LexicalTable:
    """Verb swaps in names; the target is the shared argument names' values (all equal), or
    argument-less when neither call has arguments. No shared name: unknown, not the same."""

    name = "lexical"

    def may_invert(self, name: str) -> bool:
        return _inverse(name) is not None

    def partners(self, name: str) -> frozenset[str]:
        found = _inverse(name)
        return frozenset((found[0],)) if found is not None else frozenset()

    def relation(
        self,
        name: str,
        args: Mapping[str, Any],
        earlier_name: str,
        earlier_args: Mapping[str, Any],
        earlier_result: Any,
    ) -> InverseMatch | None:
        found = _inverse(name)
        if found is None or found[0] != earlier_name:
            return None
        shared = sorted(args.keys() & earlier_args.keys())
        if shared:
            if not all(_same_target_value(earlier_args[k], args[k]) for k in shared):
                return None
            how = ", ".join(f"{k} = {k}" for k in shared)
        elif not args and not earlier_args:
            how = "argument-less target"
        else:
            return None
        return InverseMatch(f"{earlier_name}/{name}", "undo", how, (found[1],), tuple(shared))


LEXICAL_TABLE = LexicalTable()
#: Tables by name; environments' declared tables are loaded on first use (see `table_for`).
INVERSE_TABLES: dict[str, InverseTable] = {"lexical": LEXICAL_TABLE}
DECLARED_TABLES: dict[str, str] = {"bfcl": "policies.inverse_bfcl:BFCL_TABLE"}


def table_for(env: str, choice: str = "auto") -> InverseTable:
    """The table named ``choice``; "auto": the environment's declared table, else lexical."""
    for name, target in list(DECLARED_TABLES.items()):
        if name not in INVERSE_TABLES:
            module, _, attr = target.partition(":")
            INVERSE_TABLES[name] = getattr(importlib.import_module(module), attr)
    if choice != "auto":
        try:
            return INVERSE_TABLES[choice]
        except KeyError:
            raise ValueError(
                f"unknown inverse table {choice!r}; choose auto, {', '.join(INVERSE_TABLES)}"
            ) from None
    return INVERSE_TABLES.get(env.lower(), LEXICAL_TABLE)
