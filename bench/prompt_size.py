"""Benchmark: the fixed cost of a turn's prompt per seeded mode: the system prompt and the tool schemas,
in tokens (OpenAI's o200k tokenizer via bpe-openai; the local model's own tokenizer differs by a few
percent), for an Ask turn and an Agent turn. Targets: Ask in general <= 800, Agent in data-analysis
<= 1,500. MCP tools are those of the default mcp.json servers (started here).

    .venv/bin/python bench/prompt_size.py
"""

from __future__ import annotations

from pathlib import Path

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django()

from django.conf import settings
from django.core.management import call_command

from agents.run.context import TokenCounter
from agents.run.pipeline import build_system_prompt, select_tools
from modes.models import AgentMode
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

TARGETS = {("general", "ask"): 800, ("data-analysis", "agent"): 1500}


def main() -> None:
    call_command("migrate", verbosity=0)
    call_command("demo_data", verbosity=0)
    registry = ToolRegistry("mcp")
    host = McpHost(Path(settings.BASE_DIR) / "mcp.json", registry=registry)
    host.start()
    host.wait_until_sync(lambda statuses: all(s.settled for s in statuses), 60)
    counter = TokenCounter("gpt-4o")
    print("prompt_size: system prompt + tool schemas per mode, tokens (o200k)")
    print(f"  {'mode':<20} {'execution':<9} {'system':>7} {'tools':>7} {'total':>7}  tools offered")
    try:
        for mode in AgentMode.objects.filter(is_active=True).order_by("ordering"):
            for execution in ("ask", "agent"):
                selection = select_tools(policy=mode.tool_policy, toggles={}, execution=execution, mcp=registry)
                system = build_system_prompt(mode=mode, execution=execution, selection=selection)
                s, t = counter.text(system), counter.tools(selection.schemas)
                target = TARGETS.get((mode.key, execution))
                mark = f"  (target <= {target}: {'ok' if s + t <= target else 'OVER'})" if target else ""
                print(f"  {mode.key:<20} {execution:<9} {s:>7} {t:>7} {s + t:>7}  {len(selection.names)}{mark}")
    finally:
        host.stop()


if __name__ == "__main__":
    main()
