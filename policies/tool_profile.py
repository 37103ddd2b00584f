"""What a trace's tools are, as TwinCheck needs to know them: which are read-only, which class
or family each belongs to, their schemas and enumerated argument values (SPEC §5.1).

A `ToolProfile` is built once per trace from its header. Read-only status comes, in order,
from the header (``tools[].read_only`` — when any tool declares it, the undeclared ones are
writes), from the environment's declared list (BFCL: `BFCL_READ_ONLY`, read from the
package's classes: none of these methods changes an instance attribute the BFCL state checker
compares), else from a read verb at the start of the name (``get_``, ``list``…; unknown tools
are then writes, the cautious side for a twin that must not change state).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .inverse_tables import InverseTable, table_for
from .trace import Trace

_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_ENUM_DOC = re.compile(r"\[Enum\]:\s*\[([^\]]*)\]")

#: Leading name tokens that mark a read (no state change) when nothing better is known.
READ_VERBS = frozenset(
    "get list search find lookup check read show describe query fetch view calculate display "
    "retrieve estimate compute verify".split()
)

#: BFCL multi-turn methods that change no compared state (bfcl_eval's func_source_code, read
#: method by method: they only read instance attributes or build local results).
BFCL_READ_ONLY = frozenset(
    # GorillaFileSystem (cd changes the working directory, so it is not here)
    "pwd ls cat find wc sort grep du tail diff "
    # MathAPI: stateless
    "logarithm mean standard_deviation si_unit_conversion imperial_si_conversion add subtract "
    "multiply divide power square_root absolute_value round_number percentage min_value "
    "max_value sum_values "
    # MessageAPI
    "list_users get_user_id message_get_login_status view_messages_sent search_messages "
    "get_message_stats "
    # TwitterAPI (posting_api)
    "posting_get_login_status list_all_following get_tweet get_user_tweets search_tweets "
    "get_tweet_comments get_user_stats "
    # TicketAPI
    "get_ticket ticket_get_login_status get_user_tickets "
    # TradingBot
    "get_current_time get_symbol_by_name get_stock_info get_order_details get_account_info "
    "trading_get_login_status get_watchlist get_order_history get_transaction_history "
    "get_available_stocks filter_stocks_by_price notify_price_change "
    # TravelAPI
    "travel_get_login_status get_budget_fiscal_year get_flight_cost get_credit_card_balance "
    "retrieve_invoice get_booking_history list_all_airports compute_exchange_rate "
    "verify_traveler_information get_nearest_airport_by_city get_all_credit_cards "
    # VehicleControlAPI
    "displayCarStatus get_outside_temperature_from_google "
    "get_outside_temperature_from_weather_com get_current_speed display_log "
    "estimate_drive_feasibility_by_mileage liter_to_gallon gallon_to_liter estimate_distance "
    "get_zipcode_based_on_city check_tire_pressure find_nearest_tire_shop "
    # WebSearchAPI
    "search_engine_query fetch_url_content".split()
)

ENV_READ_ONLY: dict[str, frozenset[str]] = {"bfcl": BFCL_READ_ONLY}


def name_tokens(name: str) -> list[str]:
    """``releaseBrakePedal`` → [release, brake, pedal]; ``get_user_id`` → [get, user, id]."""
    return [t.lower() for part in re.split(r"[^A-Za-z0-9]+", name) for t in _CAMEL.findall(part)]


@lru_cache(maxsize=4096)
def stem(word: str) -> str:
    """A crude suffix stripper, enough to match "pressed"/"press", "locked"/"lock",
    "released"/"release", "stopped"/"stop", "unfollowing"/"unfollow"."""
    w = word.lower()
    if w.endswith("ss"):
        return w  # "press", not "pres"
    for suffix in ("ing", "ed", "es", "s", "e"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            w = w[: -len(suffix)]
            if suffix in ("ing", "ed") and len(w) > 3 and w[-1] == w[-2] and w[-1] not in "sl":
                w = w[:-1]  # "stopped" → "stop"
            return w
    return w


@lru_cache(maxsize=512)
def text_stems(text: str) -> frozenset[str]:
    return frozenset(stem(t) for t in name_tokens(text))


def enum_values(schema: Any) -> list[Any]:
    """Enumerated values of a parameter: JSON Schema ``enum``, else BFCL's ``[Enum]: [...]`` in
    the description."""
    if not isinstance(schema, dict):
        return []
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    m = _ENUM_DOC.search(str(schema.get("description", "")))
    if m is None:
        return []
    return [v.strip().strip("\"'") for v in m.group(1).split(",") if v.strip()]


@dataclass(frozen=True, slots=True)
class ToolInfo:
    name: str
    parameters: dict[str, Any]
    description: str = ""
    family: str = ""  # the environment's class (BFCL), else ""
    read_only: bool = False
    available_from: int | None = None  # first turn the tool is offered (None: always)
    excluded: bool = False  # never offered to the agent

    def properties(self) -> dict[str, Any]:
        p = self.parameters.get("properties")
        return p if isinstance(p, dict) else {}

    def required(self) -> list[str]:
        return [r for r in self.parameters.get("required") or [] if isinstance(r, str)]


@dataclass(slots=True)
class ToolProfile:
    env: str
    tools: dict[str, ToolInfo]
    inverses: InverseTable
    declared_read_only: frozenset[str] | None = None
    _ro_cache: dict[str, bool] = field(default_factory=dict)

    def read_only(self, name: str) -> bool:
        cached = self._ro_cache.get(name)
        if cached is not None:
            return cached
        info = self.tools.get(name)
        if info is not None:
            ro = info.read_only
        elif self.declared_read_only is not None:
            ro = False  # the header declares its reads; an undeclared tool is not one
        elif self.env in ENV_READ_ONLY:
            ro = name in ENV_READ_ONLY[self.env]
        else:
            ro = (name_tokens(name) or [""])[0] in READ_VERBS
        self._ro_cache[name] = ro
        return ro

    def family(self, name: str) -> str:
        info = self.tools.get(name)
        return info.family if info is not None else ""

    def available(self, name: str, turn: int | None) -> bool:
        """Whether the agent was offered the tool at ``turn``: not excluded, and not a function
        the task adds only in a later turn (BFCL's ``excluded_function``/``missed_function``).
        Unknown tools and unknown turns are not ruled out here."""
        info = self.tools.get(name)
        if info is None:
            return True
        if info.excluded:
            return False
        return info.available_from is None or turn is None or turn >= info.available_from


def _family(raw: Any) -> str:
    meta = raw.get("meta") if isinstance(raw, dict) else None
    cls = meta.get("class") if isinstance(meta, dict) else None
    return cls if isinstance(cls, str) else ""


# The last trace's profile: TwinCheck's decisions, its repeat certificate and the heuristic
# judge each ask for the same trace's in turn (three builds were a tenth of a BFCL audit).
# Keyed by the Trace object itself, which it keeps alive until the next trace.
_LAST: list[tuple[Trace, str, ToolProfile]] = []


def build_profile(trace: Trace, table: str = "auto") -> ToolProfile:
    """The profile of ``trace``'s tools; ``table`` names the inverse table ("auto": the
    environment's own when it declares one, else the lexical table)."""
    last = _LAST[0] if _LAST else None
    if last is not None and last[0] is trace and last[1] == table:
        return last[2]
    profile = _build_profile(trace, table)
    _LAST[:] = [(trace, table, profile)]
    return profile


def _build_profile(trace: Trace, table: str) -> ToolProfile:
    h = trace.header
    env = h.env_name.lower()
    raw = h.raw.get("tools")
    # Each raw tool's family (its class: `_family`), by name (the last of a name wins).
    family_of: dict[str, str] = {}
    for t in raw if isinstance(raw, list) else ():
        if isinstance(t, dict):
            name = t.get("name")
            if isinstance(name, str):
                family_of[name] = _family(t)
    declared = frozenset(t.name for t in h.tools if t.read_only)
    env_ro = ENV_READ_ONLY.get(env)
    excluded = h.env_config.get("excluded_function")
    hidden = {str(x) for x in excluded} if isinstance(excluded, list) else set()
    missed = h.env_config.get("missed_function")
    later: dict[str, int] = {}
    if isinstance(missed, dict):
        for turn, names in missed.items():
            if str(turn).isdigit() and isinstance(names, list):
                later.update((str(n), int(turn)) for n in names)
    tools: dict[str, ToolInfo] = {}
    for spec in h.tools:
        name = spec.name
        if declared:
            ro = name in declared
        elif env_ro is not None:
            ro = name in env_ro
        else:
            ro = (name_tokens(name) or [""])[0] in READ_VERBS
        tools[name] = ToolInfo(
            name,
            spec.parameters or {"type": "object"},
            spec.description,
            family_of.get(name, ""),
            ro,
            later.get(name),
            name in hidden,
        )
    return ToolProfile(env, tools, table_for(env, table), declared or None)
