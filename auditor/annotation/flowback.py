"""Flow-back: an outcome item's final verdict becomes its audit result's guarded outcome and
transition (the machine values kept in a ResultOverride), and the run's tables are recomputed.
Called by the services when an item settles or unsettles, inside the item's row lock."""

from __future__ import annotations

from auditor.annotation.human_gate import pair_flow_back
from auditor.annotation.models import AnnotationItem, ResultOverride
from auditor.runs.models import AuditResult
from auditor.runs.store import change_results
from policies.transitions import transition

# An outcome item's final label → the guarded outcome it sets ("unclear" sets nothing).
OUTCOME_VALUES = {"success": True, "failure": False}


def flow_back(item: AnnotationItem) -> None:
    """An outcome item's final verdict becomes the result's guarded outcome, and its
    transition rescue / harm / same; the machine values stay in a ResultOverride and the run's
    tables are recomputed."""
    if item.kind == "pair":
        pair_flow_back(item)  # TwinCheck's human gate: replay the trace with the verdicts
        return
    if item.kind != "outcome" or item.final_label not in OUTCOME_VALUES:
        return
    result = AuditResult.objects.select_for_update().get(pk=item.result_id)
    existing = ResultOverride.objects.filter(result=result).first()
    if existing is not None and existing.item_id != item.pk:
        return  # another item (another queue) already settled this result: first one wins
    human = OUTCOME_VALUES[item.final_label]
    machine_actor = existing.machine_actor_success if existing else result.actor_success
    machine_guarded = existing.machine_guarded_success if existing else result.guarded_success
    machine_transition = existing.machine_transition if existing else result.transition
    actor, guarded = machine_actor, human
    human_actor, human_guarded = None, human
    if machine_guarded is not None:
        if machine_actor is not None or (item.payload or {}).get("needs") != "actor outcome":
            return  # only unknown outcomes are the human's to decide
        # the item asked about the actor's own trajectory (every unknown is queued)
        actor, guarded, human_actor, human_guarded = human, machine_guarded, human, machine_guarded
    elif actor is None and result.continuation == "exact":
        # guarded = actor trajectory: the verdict on one is the verdict on the other
        actor = human_actor = human
    ResultOverride.objects.update_or_create(
        result=result,
        defaults={
            "item": item,
            "machine_actor_success": machine_actor,
            "machine_guarded_success": machine_guarded,
            "machine_transition": machine_transition,
            "human_guarded_success": human_guarded,
            "human_actor_success": human_actor,
            "source": item.final_source,
        },
    )
    _change(result, actor, guarded, transition(actor, guarded))


def revert_flow_back(item: AnnotationItem) -> None:
    if item.kind == "pair":
        pair_flow_back(item)  # the item is unsettled: replay without its verdicts
        return
    override = ResultOverride.objects.filter(item=item).select_related("result").first()
    if override is None:
        return
    result = override.result
    machine = (
        override.machine_actor_success,
        override.machine_guarded_success,
        override.machine_transition,
    )
    override.delete()
    _change(result, *machine)


def _change(result: AuditResult, actor: bool | None, guarded: bool | None, kind: str) -> None:
    """The result's outcomes and transition set, and the run's tables recomputed."""
    values = {"actor_success": actor, "guarded_success": guarded, "transition": kind}
    change_results(result.run_id, [(result.trace_id, result.policy, values)])
