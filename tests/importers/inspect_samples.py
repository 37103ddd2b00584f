"""Inspect AI eval logs written by inspect_ai itself: a real `eval()` of a two-sample
tool-using task against Inspect's built-in `mockllm/model` (scripted outputs, no network), logged
by Inspect's own log writer as `.eval` or `.json`.

One patch: the mock model counts tokens with tiktoken's o200k_base encoding, which tiktoken
downloads at first use — impossible offline — so token counting is a length estimate here.
Nothing of the log format is touched.

    python -m tests.importers.inspect_samples OUT_DIR [eval|json]
"""

from __future__ import annotations

import sys
from pathlib import Path

from traces.importers.inspect_log import off_event_loop


def write_log(out_dir: Path, log_format: str = "eval") -> Path:
    # Inspect starts its own event loop: off any running one (Playwright's, in a full run).
    return off_event_loop(_write_log, out_dir, log_format)


def _write_log(out_dir: Path, log_format: str) -> Path:
    import inspect_ai.model._model as model_module
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, system_message, use_tools
    from inspect_ai.tool import ToolError, tool

    async def estimate(self, text: str) -> int:  # type: ignore[no-untyped-def]
        return max(1, len(text) // 4)

    model_module.ModelAPI.count_text_tokens = estimate  # type: ignore[method-assign]

    @tool
    def get_weather():  # type: ignore[no-untyped-def]
        async def execute(city: str) -> str:
            """The weather of a city.

            Args:
                city: the city's name
            """
            if city == "Atlantis":
                raise ToolError("unknown city Atlantis")
            return f"18C and sunny in {city}"

        return execute

    outputs = [
        ModelOutput.for_tool_call("mockllm/model", "get_weather", {"city": "Paris"}),
        ModelOutput.from_content("mockllm/model", "It is 18C and sunny in Paris."),
        ModelOutput.for_tool_call("mockllm/model", "get_weather", {"city": "Atlantis"}),
        ModelOutput.from_content("mockllm/model", "I could not find the weather there."),
    ]
    task = Task(
        name="weather",
        dataset=[
            Sample(input="What is the weather in Paris?", target="18C", id="paris"),
            Sample(input="What is the weather in Atlantis?", target="18C", id="atlantis"),
        ],
        solver=[
            system_message("You are a travel assistant."),
            use_tools(get_weather()),
            generate(),
        ],
        scorer=includes(),
    )
    [log] = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(out_dir),
        log_format=log_format,  # type: ignore[arg-type]
        display="none",
        max_samples=1,
    )
    assert log.status == "success", log.error
    return Path(log.location)


if __name__ == "__main__":
    print(write_log(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "eval"))
