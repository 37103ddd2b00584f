"""Where each format names the model, read by one small function per format — checked on the
real file names and files of the shared data."""

from __future__ import annotations

import orjson
import pytest

from tests.importers._helpers import DATA, run, traces_of
from traces.importers._otlp_read import Span
from traces.importers.bfcl import _model_from_path
from traces.importers.inspect_log import inspect_model
from traces.importers.otlp import model_of
from traces.importers.pushback import sycon_model_from_name
from traces.importers.repair_runs import _model_from_stem
from traces.importers.tau_bench import _tau_model, tau2_model


@pytest.mark.parametrize(
    ("path", "model"),
    [
        (
            "result/gpt-4o-2024-11-20-FC/multi_turn/BFCL_v4_multi_turn_base_result.json",
            "gpt-4o-2024-11-20-FC",
        ),
        ("result/openai_gpt-oss-120b/BFCL_v4_multi_turn_base_result.json", "openai_gpt-oss-120b"),
        ("BFCL_v4_multi_turn_base_result.json", None),
    ],
)
def test_bfcl_model_from_result_folder(path, model):  # type: ignore[no-untyped-def]
    assert _model_from_path(path) == model


@pytest.mark.parametrize(
    ("name", "method", "model"),
    [
        ("mbpp_ldb_gpt-3.5-turbo-0613", "ldb", "gpt-3.5-turbo-0613"),
        ("humaneval_reflexion_gpt-3.5-turbo-0613", "reflexion", "gpt-3.5-turbo-0613"),
        ("humaneval_reflexion", "reflexion", None),
    ],
)
def test_lats_reflexion_ldb_model_from_file_name(name, method, model):  # type: ignore[no-untyped-def]
    assert _model_from_stem(name, method) == model


def test_ldb_real_files_name_their_model():
    for path in sorted((DATA / "ldb").glob("*.jsonl")):
        events, _ = run("repair_runs", path.read_bytes(), path.name)
        heads = [t[0] for t in traces_of([e.event for e in events]).values()]
        assert {h["model"] for h in heads} == {"gpt-3.5-turbo-0613"}, path.name


def test_tau_bench_model_from_the_real_file_name():
    assert _tau_model("gpt-4o-airline.json", "airline") == "gpt-4o"
    path = DATA / "tau-bench" / "gpt-4o-airline.json"
    events, _ = run("tau_bench", path.read_bytes(), path.name)
    assert {e.event.get("model") for e in events if e.event["type"] == "trace"} == {"gpt-4o"}


def test_tau2_bench_model_from_the_document_info():
    for path in sorted((DATA / "tau2-bench").glob("*_grok-3.json")):
        doc = orjson.loads(path.read_bytes())
        assert tau2_model(doc["info"]["agent_info"]) == "xai/grok-3"
        events, _ = run("tau_bench", path)  # read from the content, whatever the file's name
        assert {e.event.get("model") for e in events if e.event["type"] == "trace"} == {
            "xai/grok-3"
        }
    assert tau2_model({"implementation": "llm_agent"}) is None
    assert tau2_model(None) is None


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("false_presuppositions_Qwen2.5-7B-Instruct_prompt0.jsonl", "Qwen2.5-7B-Instruct"),
        ("false_presuppositions_claude_prompt0.jsonl", "claude"),
        ("false_presuppositions_gpt-4o_prompt0.jsonl.gz", "gpt-4o"),
        ("conversations.jsonl", None),
    ],
)
def test_sycon_model_from_file_name(name, model):  # type: ignore[no-untyped-def]
    assert sycon_model_from_name(name) == model


def test_sycon_records_without_model_dir_take_the_model_from_the_file_name():
    path = DATA / "sycon-bench" / "false_presuppositions_claude_prompt0.jsonl"
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()[:3]]
    for rec in lines:
        rec.pop("model_dir")
    data = b"\n".join(orjson.dumps(x) for x in lines) + b"\n"
    events, _ = run("pushback", data, path.name)
    heads = [e.event for e in events if e.event["type"] == "trace"]
    assert len(heads) == 3 and {(h["agent"], h["model"]) for h in heads} == {("claude", "claude")}
    for path in sorted((DATA / "sycon-bench").glob("*_prompt0.jsonl")):
        events, _ = run("pushback", path)
        models = {e.event.get("model") for e in events if e.event["type"] == "trace"}
        assert models == {sycon_model_from_name(path.name)}


def _span(attrs: dict) -> Span:
    return Span(0, "$", "t", "s", None, "llm", 0, 1, attrs, "OK", "", {}, "scope")


@pytest.mark.parametrize(
    ("attrs", "model"),
    [
        ({"gen_ai.request.model": "gpt-4o-mini"}, "gpt-4o-mini"),
        ({"llm.model_name": "gpt-4o-2024-08-06", "gen_ai.request.model": "x"}, "gpt-4o-2024-08-06"),
        ({"gen_ai.response.model": "claude-sonnet-4"}, "claude-sonnet-4"),
        ({"gen_ai.request.model": 3}, None),
        ({}, None),
    ],
)
def test_otlp_openinference_genai_model_attributes(attrs, model):  # type: ignore[no-untyped-def]
    assert model_of(_span(attrs)) == model


def test_inspect_model_from_the_eval_spec():
    class Spec:
        model = "openai/gpt-4o"

    assert inspect_model(Spec()) == "openai/gpt-4o"
    assert inspect_model(object()) is None
