"""Simulator of noisy verify-repair loops with known parameters (SPEC §5.3).

Each loop is one repair chain: candidate 0 is valid with probability ``prior``; each repair
turns invalid → valid with probability α and valid → invalid with probability β; each round's
verifier casts ``votes`` votes, each accepting with probability 1−ρ1 (valid) or ρ0 (invalid).
Because the chain does not depend on the verdicts, one simulated chain evaluates every policy:
fixed-k repair ships candidate k, VRR-Stop ships its stop round, VRR-Guard its incumbent.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from .rule import Round, VrrParams


@dataclass(frozen=True, slots=True)
class SimLoop:
    rounds: tuple[Round, ...]

    @property
    def validity(self) -> tuple[bool, ...]:
        return tuple(bool(r.valid) for r in self.rounds)


def simulate_loops(
    params: VrrParams, n_loops: int, *, n_rounds: int = 5, votes: int = 5, seed: int = 0
) -> list[SimLoop]:
    """``n_loops`` chains of ``n_rounds`` repairs (so ``n_rounds + 1`` candidates)."""
    rng = random.Random(seed)
    loops: list[SimLoop] = []
    p_acc_valid = 1.0 - params.rho1
    for _ in range(n_loops):
        valid = rng.random() < params.prior
        rounds: list[Round] = []
        for k in range(n_rounds + 1):
            p = p_acc_valid if valid else params.rho0
            accepts = sum(1 for _v in range(votes) if rng.random() < p)
            rounds.append(Round(round=k, accepts=accepts, votes=votes, valid=valid))
            if valid:
                valid = rng.random() >= params.beta
            else:
                valid = rng.random() < params.alpha
        loops.append(SimLoop(tuple(rounds)))
    return loops


def loop_events(loop: SimLoop, trace_id: str, *, label_all: bool = False) -> list[dict[str, Any]]:
    """A simulated loop as v1 events, in the shape the LDB importer writes: a ``candidate``
    per round and a ``verification`` with its votes; ``labels.valid`` on the final candidate
    (on every candidate with ``label_all``)."""
    events: list[dict[str, Any]] = [
        {"trace_id": trace_id, "type": "trace", "task": {"id": trace_id}}
    ]
    last = len(loop.rounds) - 1
    for r in loop.rounds:
        cid = f"{trace_id}-c{r.round}"
        cand: dict[str, Any] = {
            "trace_id": trace_id,
            "type": "candidate",
            "candidate_id": cid,
            "round": r.round,
            "content": f"candidate {r.round}",
            "parent": f"{trace_id}-c{r.round - 1}" if r.round else None,
        }
        if label_all or r.round == last:
            cand["labels"] = {"valid": bool(r.valid)}
        events.append(cand)
        events.append(
            {
                "trace_id": trace_id,
                "type": "verification",
                "candidate_id": cid,
                "round": r.round,
                "accepts": r.accepts,
                "votes": r.votes,
                "verifier": "sim",
            }
        )
    return events
